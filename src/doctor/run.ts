/*
 * The `doctor` command line: arguments in, text out, an exit status back. The executable is
 * ./cli.ts.
 */
import { commandLine, type CliOptions } from '../runtime/cli-args';
import { STDIO, type CliOutput } from '../runtime/cli-output';
import { loadSwitchboardConfigFile } from '../config/load-config-file';
import { MAX_TIMER_MS } from '../config/value-checks';
import { scrub, STACK_LIMIT } from '../errors/scrub';
import { CredentialSetupError } from './credential-setup.error';
import { COGNITIVE_SERVICES_SCOPE, withTokenProvider, type TokenSource } from './credentials';
import { checkDeployments } from './doctor';
import type { DoctorRow } from './doctor-row';
import { formatPoolLevels } from './pool-levels';
import { formatTable } from './table';

const USAGE = `Usage: nestjs-switchboard doctor <config.yaml|config.json> [--json] [--timeout <ms>]
       [--token <module> | --entra [--scope <url>]]

Sends every model of every deployment in the file the smallest real request (one output token,
or embeddings of one word) and prints what each answered, its latency and the limits the
upstream reports beside the configured ones. \${VAR} in the file is read from the environment.

  --json          print the rows as JSON: [{ deployment, model, ok, status?, error?, latencyMs?, limits? }]
  --timeout <ms>  how long each request may take (default: the deployment's timeout, at most 10000)
  --token <file>  a module exporting the token function your app gives deployments without a key
                  (export default async () => token), used for each of them
  --entra         the same with @azure/identity's DefaultAzureCredential (installed by you), for
                  --scope <url> (default ${COGNITIVE_SERVICES_SCOPE})

Exit status: 0 when every row answered, 1 when any failed, 2 on a usage or configuration error.

To plan quota from recorded traffic: nestjs-switchboard plan --help`;

const DOCTOR_OPTIONS: CliOptions = {
  json: { type: 'boolean' },
  entra: { type: 'boolean' },
  token: { type: 'string' },
  scope: { type: 'string' },
  timeout: { type: 'string' },
};

/**
 * Runs the command line `args` (without `node` and the script) and resolves its exit status.
 *
 * @example
 * ```ts
 * const status = await runDoctorCli(['doctor', 'switchboard.yaml', '--json']);
 * ```
 */
export async function runDoctorCli(
  args: readonly string[],
  output: CliOutput = STDIO,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<number> {
  const read = commandLine(
    args,
    { command: 'doctor', options: DOCTOR_OPTIONS, usage: USAGE },
    output,
  );
  if (typeof read === 'number') return read;
  const { given, positionals: files } = read;
  const tokens: TokenSource = {};
  if (given.has('entra')) tokens.entra = true;
  for (const name of ['token', 'scope'] as const) {
    if (!given.has(name)) continue;
    const value = given.get(name);
    if (typeof value !== 'string') {
      output.err(`--${name} needs a value\n\n${USAGE}`);
      return 2;
    }
    if (name === 'token') tokens.module = value;
    else tokens.scope = value;
  }
  let timeout: number | undefined;
  if (given.has('timeout')) {
    timeout = Number(given.get('timeout'));
    if (!Number.isInteger(timeout) || timeout <= 0 || timeout > MAX_TIMER_MS) {
      output.err(
        `--timeout must be a positive number of milliseconds, at most ${MAX_TIMER_MS}\n\n${USAGE}`,
      );
      return 2;
    }
  }
  if (files.length !== 1) {
    output.err(USAGE);
    return 2;
  }
  let options;
  try {
    options = await withTokenProvider(loadSwitchboardConfigFile(files[0]!, env), tokens);
  } catch (error) {
    // A credential-setup message is the doctor's own words about the user's own arguments (a
    // module path can look like a token to scrub); what it quotes of a thrown error is scrubbed
    // where it is written.
    output.err(
      error instanceof CredentialSetupError
        ? error.message
        : scrub(error instanceof Error ? error.message : String(error), STACK_LIMIT),
    );
    return 2;
  }
  const checks = await checkDeployments(options, { timeout });
  output.out(
    given.has('json')
      ? JSON.stringify(
          checks.map((c) => inOrder(c.row)),
          null,
          2,
        )
      : formatTable(checks) + formatPoolLevels(options, checks),
  );
  return checks.every((c) => c.row.ok) ? 0 : 1;
}

/** A row with its keys in the documented order (absent ones left out). */
function inOrder(row: DoctorRow): DoctorRow {
  const { deployment, model, ok, status, error, latencyMs, limits } = row;
  const out: DoctorRow = { deployment, model, ok };
  if (status !== undefined) out.status = status;
  if (error !== undefined) out.error = error;
  if (latencyMs !== undefined) out.latencyMs = latencyMs;
  if (limits !== undefined) out.limits = limits;
  return out;
}

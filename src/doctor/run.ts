/*
 * The `doctor` command line: arguments in, text out, an exit status back. The executable is
 * ./cli.ts.
 */
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
  const rest = [...args];
  if (rest[0] === 'doctor') rest.shift();
  let json = false;
  let timeout: number | undefined;
  const files: string[] = [];
  const tokens: TokenSource = {};
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '--json') json = true;
    else if (arg === '--entra') tokens.entra = true;
    else if (arg === '--token' || arg === '--scope') {
      const value = rest[++i];
      if (value === undefined || value.startsWith('-')) {
        output.err(`${arg} needs a value\n\n${USAGE}`);
        return 2;
      }
      if (arg === '--token') tokens.module = value;
      else tokens.scope = value;
    } else if (arg === '--help' || arg === '-h') {
      output.out(USAGE);
      return 0;
    } else if (arg === '--timeout') {
      timeout = Number(rest[++i]);
      if (!Number.isInteger(timeout) || timeout <= 0 || timeout > MAX_TIMER_MS) {
        output.err(
          `--timeout must be a positive number of milliseconds, at most ${MAX_TIMER_MS}\n\n${USAGE}`,
        );
        return 2;
      }
    } else if (arg.startsWith('-')) {
      output.err(`unknown option ${arg}\n\n${USAGE}`);
      return 2;
    } else files.push(arg);
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
    json
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

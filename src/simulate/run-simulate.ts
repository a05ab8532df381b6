/*
 * `npx nestjs-switchboard simulate <config.yaml|json> [--port <n>] [--latency <ms>]`: simulated
 * deployments standing in for those of a configuration, in a process of their own, and the
 * environment to export so that the configuration points at them.
 */
import { once } from 'node:events';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { loadSwitchboardConfigFile } from '../config/load-config-file';
import { SIMULATE_ENV } from '../config/simulate-option';
import { readBoundedFile, MAX_CONFIG_FILE_BYTES } from '../config/read-bounded-file';
import { commandLine } from '../runtime/cli-args';
import type { CliOutput } from '../runtime/cli-output';
import { SimulatedUpstream } from '../testing/simulated-upstream';
import { simulatedDeployments, type SimulatedStandIn } from './simulated-deployments';

const USAGE = `Usage: nestjs-switchboard simulate <config.yaml|config.json> [--port <n>] [--latency <ms>]

Starts a simulated deployment for each deployment of the file (its quota, its URL shape: Azure
OpenAI, OpenAI or Claude on Foundry; any key or Entra ID token accepted) on 127.0.0.1 and prints
the variables to export so that the file's \${VAR} endpoints point at them. Runs until Ctrl-C.

  --port <n>      the port to listen on (default: a free one)
  --latency <ms>  how long each answer takes (default 40)

To simulate inside your app instead: SWITCHBOARD_SIMULATE=1.`;

const NUMBER = { type: 'string' } as const;

/** `${VAR}`, `${VAR:-default}` or `${VAR-default}` at the start of a value, and what follows. */
const LEADING_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-[^}]*)?\}(.*)$/;

/**
 * Runs the command line `args` until `stopped` settles (default: SIGINT or SIGTERM) and resolves
 * its exit status.
 *
 * @example
 * ```ts
 * const status = await runSimulateCli(['simulate', 'switchboard.yaml'], STDIO);
 * ```
 */
export async function runSimulateCli(
  args: readonly string[],
  output: CliOutput,
  env: Readonly<Record<string, string | undefined>> = process.env,
  stopped: Promise<unknown> = Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')]),
): Promise<number> {
  const options = { port: NUMBER, latency: NUMBER };
  const read = commandLine(args, { command: 'simulate', options, usage: USAGE }, output);
  if (typeof read === 'number') return read;
  const { given, positionals: files } = read;
  const numbers: Record<string, number | undefined> = {};
  for (const [name, most, what] of [
    ['port', 65_535, ' from 0 to 65535'],
    ['latency', 600_000, ' of milliseconds'],
  ] as const) {
    if (!given.has(name)) continue;
    const value = Number(given.get(name));
    if (!Number.isInteger(value) || value < 0 || value > most) {
      output.err(`--${name} must be a whole number${what}\n\n${USAGE}`);
      return 2;
    }
    numbers[name] = value;
  }
  if (files.length !== 1) {
    output.err(USAGE);
    return 2;
  }
  const file = files[0]!;
  let standIns: SimulatedStandIn[];
  let raw: unknown;
  try {
    // Simulated, no endpoint or key needs to be set for the file to load.
    const options = loadSwitchboardConfigFile(file, { ...env, [SIMULATE_ENV]: '1' });
    standIns = simulatedDeployments(options, { latency: numbers.latency });
    raw = parseYaml(readBoundedFile(resolve(file), MAX_CONFIG_FILE_BYTES));
  } catch (error) {
    output.err(error instanceof Error ? error.message : String(error));
    return 2;
  }
  let upstream: SimulatedUpstream;
  try {
    upstream = await SimulatedUpstream.start({
      deployments: standIns.map((s) => s.simulated),
      port: numbers.port,
    });
  } catch (error) {
    output.err(`cannot listen: ${error instanceof Error ? error.message : String(error)}`);
    return 2;
  }
  try {
    const rawDeployments = (raw as { deployments?: Record<string, unknown>[] }).deployments ?? [];
    output.out(exportsFor(standIns, rawDeployments, upstream.url).join('\n'));
    output.err(
      `simulating ${standIns.length} deployments on ${upstream.url} (${standIns.map((s) => s.config.name).join(', ')}); Ctrl-C stops`,
    );
    await stopped;
    return 0;
  } finally {
    await upstream.close();
  }
}

/** The `export VAR=value` lines that point the file's references at the stand-ins. */
function exportsFor(
  standIns: readonly SimulatedStandIn[],
  raw: readonly Record<string, unknown>[],
  origin: string,
): string[] {
  const lines = new Map<string, string>();
  standIns.forEach((standIn, i) => {
    const fields = raw[i] ?? {};
    const url = `${origin}${standIn.path}`;
    const endpoint =
      typeof fields.baseURL === 'string' ? LEADING_REFERENCE.exec(fields.baseURL) : null;
    if (endpoint !== null) {
      const [, name, suffix] = endpoint as unknown as [string, string, string];
      // `${ENDPOINT}/openai/v1/`: the variable is the URL without what the file appends.
      const value = suffix !== '' && url.endsWith(suffix) ? url.slice(0, -suffix.length) : url;
      lines.set(name, `export ${name}=${value}`);
    } else if (typeof fields.baseURL !== 'string') {
      lines.set(
        `# ${standIn.config.name}`,
        `# deployments[${i}] ('${standIn.config.name}') has no \${VAR} baseURL: set its baseURL to ${url}`,
      );
    }
    const key = typeof fields.apiKey === 'string' ? LEADING_REFERENCE.exec(fields.apiKey) : null;
    if (key !== null) lines.set(key[1]!, `export ${key[1]!}=simulated`);
  });
  return [...lines.values()];
}

/*
 * The `plan` command line: arguments in, a report out, an exit status back. The executable is
 * ../doctor/cli.ts, which hands `plan` here.
 */
import { closeSync, constants, fstatSync, ftruncateSync, openSync, writeFileSync } from 'node:fs';
import type { SwitchboardOptions } from '../config/switchboard-options';
import { loadConfigFileWithoutKeys } from '../config/load-config-file';
import { commandLine, type CliOptions } from '../runtime/cli-args';
import type { CliOutput } from '../runtime/cli-output';
import { plan } from './plan';
import { formatPlan, planHtml } from './plan-report';
import { TrafficFileError } from './traffic-file.error';
import { readTraffic, type TrafficTrace } from './traffic-trace';

/** The range of `--scale`: beyond it the replay's times lose their meaning (or overflow). */
const MIN_SCALE = 0.001;
const MAX_SCALE = 1000;

const USAGE = `Usage: nestjs-switchboard plan <traffic.jsonl> --config <config.yaml|json> [--scale N] [--find-tpm] [--json] [--html <file>]

Replays recorded traffic (recordTraffic) through the switchboard's own routing in virtual time,
against deployments that enforce the configured limits as each upstream documents them (Azure
OpenAI standard or provisioned, OpenAI, Claude on Foundry), and reports per deployment the calls sent, upstream 429s and utilization, and for the callers
how many failed and how long they waited.

  --config <file>  the switchboard configuration to plan for (API keys are not needed)
  --scale N        replay the arrivals N times faster (default 1)
  --find-tpm       search, per model, the smallest uniform scaling of its quota at which no
                   caller fails and the p95 wait stays within queue.maxWait (0 without a queue)
  --json           print { calls, deployments, callers, suggestion? } as JSON
  --html <file>    also write a self-contained HTML report with charts over time

Exit status: 0 when the plan was made, 2 on a usage, traffic file or configuration error.`;

/** Where a one-line problem sends the reader for the rest. */
const SEE_HELP = ' (nestjs-switchboard plan --help)';

const PLAN_OPTIONS: CliOptions = {
  config: { type: 'string' },
  html: { type: 'string' },
  scale: { type: 'string' },
  json: { type: 'boolean' },
  'find-tpm': { type: 'boolean' },
};

/**
 * Runs `plan ...` (without `node` and the script) and resolves its exit status.
 *
 * @example
 * ```ts
 * const status = await runPlanCli(['plan', 'traffic.jsonl', '--config', 'sb.yaml', '--find-tpm']);
 * ```
 */
export async function runPlanCli(
  args: readonly string[],
  output: CliOutput,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<number> {
  // One line: what is wrong, and where the rest is said.
  const usage = (problem: string) => {
    output.err(`${problem}${SEE_HELP}`);
    return 2;
  };
  const read = commandLine(
    args,
    { command: 'plan', options: PLAN_OPTIONS, usage: USAGE, say: (p) => `${p}${SEE_HELP}` },
    output,
  );
  if (typeof read === 'number') return read;
  const { given, positionals: files } = read;
  let scale = 1;
  if (given.has('scale')) {
    scale = Number(given.get('scale'));
    if (!(scale >= MIN_SCALE && scale <= MAX_SCALE)) {
      return usage(`--scale must be a number from ${MIN_SCALE} to ${MAX_SCALE}`);
    }
  }
  if (files.length !== 1) return usage('name one traffic file');
  const config = given.get('config');
  if (typeof config !== 'string' || config === '') return usage('--config <file> is required');
  const html = given.get('html');
  if (given.has('html') && (typeof html !== 'string' || html === '')) {
    return usage('--html needs a file name');
  }
  const json = given.has('json');
  const findTpm = given.has('find-tpm');
  let options: SwitchboardOptions;
  let trace: TrafficTrace;
  let htmlFd: number | undefined;
  try {
    // API keys are not used by a replay: an unset variable there need not stop it.
    options = loadConfigFileWithoutKeys(config, env);
    trace = readTraffic(files[0]!);
    // Opened before the replay: a path that cannot be written is said before minutes of work.
    if (typeof html === 'string') htmlFd = openHtml(html);
  } catch (error) {
    output.err(oneLine(error));
    return 2;
  }
  try {
    return await planAndReport({ trace, options, scale, findTpm, json, htmlFd }, files[0]!, output);
  } catch (error) {
    if (error instanceof TrafficFileError) {
      output.err(error.message.replace('the configuration', config));
    } else {
      output.err(`plan failed: ${oneLine(error)}`);
    }
    return 2;
  } finally {
    if (htmlFd !== undefined) closeSync(htmlFd);
  }
}

/** What {@link runPlanCli} read from its arguments and files. */
interface PlanRun {
  trace: TrafficTrace;
  options: SwitchboardOptions;
  scale: number;
  findTpm: boolean;
  json: boolean;
  htmlFd: number | undefined;
}

async function planAndReport(run: PlanRun, file: string, output: CliOutput): Promise<number> {
  const { trace, scale, htmlFd } = run;
  const made = await plan(trace, run.options, { scale, findTpm: run.findTpm });
  if (trace.outOfOrder > 0) {
    output.err(
      `${file}: ${trace.outOfOrder} lines have an earlier time than the line before them; the calls were sorted by time`,
    );
  }
  if (htmlFd !== undefined) writeFileSync(htmlFd, planHtml(made, file, scale));
  output.out(run.json ? JSON.stringify(made.report, null, 2) : formatPlan(made, scale));
  return 0;
}

/** The `--html` file, created (or emptied) for writing, or an error naming it and why. */
function openHtml(path: string): number {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO without a reader fails at once instead of waiting for one.
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_NONBLOCK, 0o644);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new Error(`--html ${path} cannot be written (${code})`);
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new Error(`--html ${path} is not a regular file (a device or FIFO is never written)`);
  }
  ftruncateSync(fd, 0);
  return fd;
}

/** An error's first line, without its stack: what a user reads. */
function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n', 1)[0]!;
}

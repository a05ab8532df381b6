/*
 * The `plan` command line: arguments in, a report out, an exit status back. The executable is
 * ../doctor/cli.ts, which hands `plan` here.
 */
import { writeFileSync } from 'node:fs';
import type { SwitchboardOptions } from '../config/switchboard-options';
import { loadSwitchboardConfigFile } from '../config/load-config-file';
import type { CliOutput } from '../runtime/cli-output';
import { plan } from './plan';
import { formatPlan, planHtml } from './plan-report';
import { TrafficFileError } from './traffic-file.error';
import { readTraffic, type TrafficTrace } from './traffic-trace';

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
  const rest = [...args];
  if (rest[0] === 'plan') rest.shift();
  let config: string | undefined;
  let html: string | undefined;
  let scale = 1;
  let json = false;
  let findTpm = false;
  const files: string[] = [];
  const usage = (problem: string) => {
    output.err(`${problem}\n\n${USAGE}`);
    return 2;
  };
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '--help' || arg === '-h') {
      output.out(USAGE);
      return 0;
    } else if (arg === '--json') json = true;
    else if (arg === '--find-tpm') findTpm = true;
    else if (arg === '--config') config = rest[++i];
    else if (arg === '--html') html = rest[++i];
    else if (arg === '--scale') {
      scale = Number(rest[++i]);
      if (!Number.isFinite(scale) || scale <= 0) return usage('--scale must be a number > 0');
    } else if (arg.startsWith('-')) return usage(`unknown option ${arg}`);
    else files.push(arg);
  }
  if (files.length !== 1) return usage('name one traffic file');
  if (config === undefined || config === '') return usage('--config <file> is required');
  if (html === '') return usage('--html needs a file name');
  let options: SwitchboardOptions;
  let trace: TrafficTrace;
  try {
    // API keys are not used by a replay: an unset variable there need not stop it.
    options = loadSwitchboardConfigFile(config, withPlaceholders(env));
    trace = readTraffic(files[0]!);
  } catch (error) {
    output.err(error instanceof Error ? error.message : String(error));
    return 2;
  }
  let made;
  try {
    made = await plan(trace, options, { scale, findTpm });
  } catch (error) {
    if (error instanceof TrafficFileError) {
      output.err(error.message.replace('the configuration', config));
      return 2;
    }
    throw error;
  }
  if (trace.outOfOrder > 0) {
    output.err(
      `${files[0]}: ${trace.outOfOrder} lines have an earlier time than the line before them; the calls were sorted by time`,
    );
  }
  if (html !== undefined) writeFileSync(html, planHtml(made, files[0]!, scale));
  output.out(json ? JSON.stringify(made.report, null, 2) : formatPlan(made, scale));
  return 0;
}

/** `env`, where an unset variable reads as a placeholder. */
function withPlaceholders(
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string | undefined> {
  return new Proxy({} as Record<string, string | undefined>, {
    get: (_t, name) => (typeof name === 'string' ? (env[name] ?? 'unset-in-plan') : undefined),
    has: () => true,
  });
}

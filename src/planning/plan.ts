import type { SwitchboardOptions } from '../config/switchboard-options';
import { replay, type ReplayOptions, type ReplayResult } from './replay';
import type { TrafficTrace } from './traffic-trace';

/**
 * The `--json` shape of `nestjs-switchboard plan`: per deployment and model, what was sent, how
 * many the upstream refused and the utilization; for the callers, failures and waits; with
 * `--find-tpm`, per model the total tokens per minute (across its deployments) that serve the
 * trace.
 *
 * @example
 * ```ts
 * const report: PlanReport = {
 *   calls: 2400,
 *   deployments: [{ deployment: 'east', model: 'gpt-4o', sent: 1200, upstream429s: 0, utilization: 0.87 }],
 *   callers: { failed: 0, waitP50Ms: 0, waitP95Ms: 0 },
 *   suggestion: { 'gpt-4o': { tpm: 110_000 } },
 * };
 * ```
 */
export interface PlanReport {
  calls: number;
  deployments: {
    deployment: string;
    model: string;
    sent: number;
    upstream429s: number;
    utilization: number;
  }[];
  callers: { failed: number; waitP50Ms: number; waitP95Ms: number };
  suggestion?: Record<string, { tpm: number | null }>;
}

/**
 * Options of {@link plan}: those of a replay, and whether to search the smallest quota.
 *
 * @example
 * ```ts
 * await plan(trace, options, { scale: 2, findTpm: true });
 * ```
 */
export interface PlanOptions extends Omit<ReplayOptions, 'quota'> {
  findTpm?: boolean;
  /** Told of every replay the search makes (factor per model, and its outcome). */
  onReplay?: (quota: ReadonlyMap<string, number>, result: ReplayResult) => void;
}

/** A plan: the replay at the configured quota, and the search's suggestion if asked for. */
export interface Plan {
  result: ReplayResult;
  /** Per model: the smallest uniform factor of its quota that served the trace (null: none up to the cap). */
  factors?: ReadonlyMap<string, number | null>;
  report: PlanReport;
}

/** The largest quota factor the search tries. */
const MAX_FACTOR = 1_024;
/** The search stops when every model's factor is known within this share. */
const PRECISION = 0.01;
const MAX_STEPS = 24;

/**
 * Replays `trace` against the configuration, and with `findTpm` searches per model the smallest
 * uniform scaling of its quota (every limit of every deployment serving it) at which no caller
 * of it fails and its p95 wait stays within `queue.maxWait` (zero without a queue): doubling until
 * it serves, then halving the interval, all models in the same replays.
 *
 * @example
 * ```ts
 * const { report } = await plan(readTraffic('traffic.jsonl'), options, { scale: 2, findTpm: true });
 * report.suggestion; // { 'gpt-4o': { tpm: 110000 } }
 * ```
 */
export async function plan(
  trace: TrafficTrace,
  options: SwitchboardOptions,
  o: PlanOptions = {},
): Promise<Plan> {
  const result = await replay(trace, options, o);
  o.onReplay?.(new Map(), result);
  const report = toReport(result);
  if (!o.findTpm) return { result, report };
  const maxWait = options.queue?.maxWait;
  const serves = (r: ReplayResult, model: string) => {
    const c = r.perModel[model]!;
    return c.failed === 0 && c.waitP95Ms <= (maxWait ?? 0);
  };
  const models = [...trace.models];
  const lo = new Map<string, number>(models.map((m) => [m, 0]));
  const hi = new Map<string, number | undefined>();
  for (const m of models) if (serves(result, m)) hi.set(m, 1);
  const factor = new Map<string, number>(models.map((m) => [m, hi.has(m) ? 0.5 : 2]));
  for (const m of models) if (!hi.has(m)) lo.set(m, 1);
  for (let step = 0; step < MAX_STEPS; step++) {
    const open = models.filter((m) => {
      const h = hi.get(m);
      if (h === undefined) return lo.get(m)! < MAX_FACTOR;
      return h - lo.get(m)! > PRECISION * h;
    });
    if (open.length === 0) break;
    const quota = new Map<string, number>();
    for (const m of models)
      quota.set(m, open.includes(m) ? factor.get(m)! : (hi.get(m) ?? MAX_FACTOR));
    // A replay whose open models have all failed once has said what it can: it stops there.
    const r = await replay(trace, options, { ...o, quota, stopWhenFailed: new Set(open) });
    o.onReplay?.(quota, r);
    for (const m of open) {
      const f = factor.get(m)!;
      if (serves(r, m)) hi.set(m, f);
      else lo.set(m, f);
      const h = hi.get(m);
      factor.set(m, h === undefined ? Math.min(MAX_FACTOR, f * 2) : (lo.get(m)! + h) / 2);
    }
  }
  const factors = new Map<string, number | null>(models.map((m) => [m, hi.get(m) ?? null]));
  const suggestion: Record<string, { tpm: number | null }> = {};
  for (const m of models) {
    const f = factors.get(m)!;
    let tpm = 0;
    for (const d of options.deployments) {
      for (const model of d.models) if (model.name === m) tpm += model.tpm ?? 0;
    }
    suggestion[m] = { tpm: f === null ? null : Math.ceil(tpm * f) };
  }
  return { result, factors, report: { ...report, suggestion } };
}

function toReport(r: ReplayResult): PlanReport {
  return {
    calls: r.calls,
    deployments: r.deployments.map((d) => ({
      deployment: d.deployment,
      model: d.model,
      sent: d.sent,
      upstream429s: d.upstream429s,
      utilization: Math.round(d.utilization * 1000) / 1000,
    })),
    callers: {
      failed: r.callers.failed,
      waitP50Ms: r.callers.waitP50Ms,
      waitP95Ms: r.callers.waitP95Ms,
    },
  };
}

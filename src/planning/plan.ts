import type { SwitchboardOptions } from '../config/switchboard-options';
import { replay, type ReplayOptions, type ReplayResult } from './replay';
import type { TrafficTrace } from './traffic-trace';

/**
 * The `--json` shape of `nestjs-switchboard plan`: per deployment and model, what was sent, how
 * many the upstream refused and the utilization; for the callers, failures and waits; with
 * `--find-tpm`, per model the total tokens per minute (across its deployments) that serve the
 * trace: `tpm`, and for a model limited apart on input and output (Claude) its `itpm` and `otpm`
 * too, `tpm` then their sum where no combined limit is configured (what Anthropic's
 * `tokens-limit` header reports).
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
  suggestion?: Record<string, Suggestion>;
}

/**
 * The quota that serves the trace, per model, across its deployments (a quota pool counted once):
 * null when none was found up to the search's cap.
 *
 * @example
 * ```ts
 * const claude: Suggestion = { tpm: 250_000, itpm: 200_000, otpm: 50_000 };
 * ```
 */
interface Suggestion {
  tpm: number | null;
  itpm?: number | null;
  otpm?: number | null;
}

/**
 * Options of {@link plan}: those of a replay, and whether to search the smallest quota.
 *
 * @example
 * ```ts
 * await plan(trace, options, { scale: 2, findTpm: true });
 * ```
 */
interface PlanOptions extends Omit<ReplayOptions, 'quota'> {
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
  const suggestion: Record<string, Suggestion> = {};
  for (const m of models) {
    const f = factors.get(m)!;
    const total = { tpm: 0, itpm: 0, otpm: 0 };
    const pools = new Set<string>();
    for (const d of options.deployments) {
      for (const model of d.models) {
        if (model.name !== m) continue;
        // Pool members share one quota (and must state the same limits): it counts once.
        if (model.quotaPool !== undefined) {
          if (pools.has(model.quotaPool)) continue;
          pools.add(model.quotaPool);
        }
        total.tpm += model.tpm ?? 0;
        total.itpm += model.itpm ?? 0;
        total.otpm += model.otpm ?? 0;
      }
    }
    const scaled = (v: number) => (f === null ? null : Math.ceil(v * f));
    const s: Suggestion = { tpm: scaled(total.tpm || total.itpm + total.otpm) };
    if (total.itpm > 0) s.itpm = scaled(total.itpm);
    if (total.otpm > 0) s.otpm = scaled(total.otpm);
    suggestion[m] = s;
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

import type { TrafficTrace } from './traffic-trace';
import type { CallerOutcome, DeploymentOutcome, Upstream } from './replay-types';

/**
 * Per model, what its callers saw: `waits` and `failed` are per call of `trace` (the first
 * `waits.length`). Each model's waits are copied once into an array of their exact count.
 *
 * @example
 * ```ts
 * const perModel = perModelOutcomes(trace, waits, failed); // { 'gpt-4o': { calls, failed, ... } }
 * ```
 */
export function perModelOutcomes(
  trace: TrafficTrace,
  waits: Float64Array,
  failed: Uint8Array,
): Record<string, CallerOutcome> {
  const arrived = waits.length;
  const counts = new Uint32Array(trace.models.length);
  for (let i = 0; i < arrived; i++) counts[trace.model[i]!]++;
  const perModel: Record<string, CallerOutcome> = {};
  trace.models.forEach((name, m) => {
    const mine = new Float64Array(counts[m]!);
    let bad = 0;
    for (let i = 0, j = 0; i < arrived; i++) {
      if (trace.model[i] !== m) continue;
      mine[j++] = waits[i]!;
      bad += failed[i]!;
    }
    perModel[name] = callerOutcome(mine, bad);
  });
  return perModel;
}

/**
 * What each model on each deployment saw: its utilization over the span and per slice, and the
 * mean wait of the calls first sent there per slice.
 *
 * @example
 * ```ts
 * const outcomes = deploymentOutcomes(upstreams, { slices: 120, spanMs, sliceMs });
 * ```
 */
export function deploymentOutcomes(
  upstreams: Iterable<ReadonlyMap<string, Upstream>>,
  span: { slices: number; spanMs: number; sliceMs: number },
): DeploymentOutcome[] {
  const { slices, spanMs, sliceMs } = span;
  const outcomes: DeploymentOutcome[] = [];
  for (const models of upstreams) {
    for (const up of models.values()) {
      const { outcome } = up;
      const limits = outcome.limits;
      // Of each limit, the share used; the most used one is the deployment's utilization.
      const used = (tokens: number, k: number, ms: number) =>
        tokens / ((limits[k]!.perMinute / 60_000) * ms);
      outcome.utilization = 0;
      for (let k = 0; k < limits.length; k++) {
        outcome.utilization = Math.max(outcome.utilization, used(up.tokens[k]!, k, spanMs));
      }
      const sliceUse = new Array<number>(slices).fill(0);
      for (let k = 0; k < limits.length; k++) {
        for (let s = 0; s < slices; s++) {
          sliceUse[s] = Math.max(sliceUse[s]!, used(up.sliceTokens[k * slices + s]!, k, sliceMs));
        }
      }
      outcome.series = {
        utilization: sliceUse,
        waitMs: Array.from(up.sliceWait, (w, s) =>
          up.sliceSent[s]! > 0 ? w / up.sliceSent[s]! : 0,
        ),
      };
      outcomes.push(outcome);
    }
  }
  return outcomes;
}

/**
 * What callers saw from their `waits` (sorted in place: the array is the caller's to give) and
 * how many `failed`.
 *
 * @example
 * ```ts
 * callerOutcome(Float64Array.of(0, 10, 200), 1); // { calls: 3, failed: 1, waitP50Ms: 10, waitP95Ms: 200 }
 * ```
 */
export function callerOutcome(waits: Float64Array, failed: number): CallerOutcome {
  const sorted = waits.sort();
  return {
    calls: waits.length,
    failed,
    waitP50Ms: Math.round(quantile(sorted, 0.5)),
    waitP95Ms: Math.round(quantile(sorted, 0.95)),
  };
}

/** The q-quantile of ascending `xs` (nearest rank); 0 when empty. */
function quantile(xs: Float64Array, q: number): number {
  if (xs.length === 0) return 0;
  return xs[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)]!;
}

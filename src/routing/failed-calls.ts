import type { SwitchboardMetrics } from '../telemetry/switchboard-metrics';

/**
 * Calls that failed for their callers, per model.
 *
 * @example
 * ```ts
 * const failed: FailedCalls = { rateLimited: 2, other: 0 };
 * ```
 */
export interface FailedCalls {
  /** 429s, held back for want of room or from the upstream. */
  rateLimited: number;
  other: number;
}

/**
 * The count of calls that failed for their callers since the switchboard started, per model
 * (after failover), and the metric of each.
 *
 * @example
 * ```ts
 * const counts = new FailedCallCounts(metrics);
 * counts.add('gpt-4o', error);
 * counts.read(); // { 'gpt-4o': { rateLimited: 1, other: 0 } }
 * ```
 */
export class FailedCallCounts {
  private readonly byModel = new Map<string, FailedCalls>();

  constructor(private readonly metrics: SwitchboardMetrics) {}

  /** A call of `model` failed for its caller with `error`. */
  add(model: string, error: unknown): void {
    this.metrics.callFailed(model, error);
    let counts = this.byModel.get(model);
    if (counts === undefined) {
      counts = { rateLimited: 0, other: 0 };
      this.byModel.set(model, counts);
    }
    if ((error as { status?: unknown } | null)?.status === 429) counts.rateLimited++;
    else counts.other++;
  }

  /** A copy of the counts, per model. */
  read(): Record<string, FailedCalls> {
    const out: Record<string, FailedCalls> = {};
    for (const [model, c] of this.byModel) out[model] = { ...c };
    return out;
  }
}

import { roomLeft, type Admission } from './admission';
import { takeReported, waitFor, type Anchoring, type CounterScope } from './limit-counter';
import type { OutputEstimate } from './output-estimate';
import type { QuotaLimit } from './quota-limit';
import type { ReportedLimit } from './rate-limit-headers';
import type { UsageCount } from './drain-count';
import { agreed } from './send-order';
import { UsageCounter } from './usage-counter';

/**
 * What the input and the output counters share ({@link InputCounter} for `itpm`,
 * {@link OutputCounter} for `otpm`, Claude on Foundry): its own count (for Claude a `DrainCount`,
 * as the upstream's buckets refill continuously), and a correction from the upstream's
 * `anthropic-ratelimit-{input,output}-tokens-remaining` that fades over the window (no window end
 * to wait for).
 *
 * @example
 * ```ts
 * const input: IoCounter = new InputCounter(new QuotaLimit('itpm', 30_000), new WindowCount(clock), scope);
 * input.room(now); // the largest input charge that fits now
 * ```
 */
export abstract class IoCounter extends UsageCounter {
  /** What it counts: input or output. */
  declare readonly unit: 'input' | 'output';

  constructor(
    limit: QuotaLimit,
    /** This instance's input (or output) tokens, its own. */
    window: UsageCount,
    unit: 'input' | 'output',
    scope: CounterScope,
    /**
     * Claude's output: the upstream counts what answers produce, when they end; calls are
     * charged this estimate of it at admission, never more than the limit.
     */
    private readonly estimate?: OutputEstimate,
  ) {
    super(limit, window, unit, scope);
  }

  override room(now: number, admission?: Admission): number {
    const room = super.room(now, admission);
    // A call is charged at most the estimate, whatever its cap: with room for that, any call fits.
    return this.estimate !== undefined && room >= this.estimate.of(Infinity) ? Infinity : room;
  }

  protected limitWait(admission: Admission, now: number): number {
    const value = this.limit.value;
    if (value <= 0) return 0;
    const target = roomLeft(value, 0, admission) - this.charge(admission);
    return waitFor(this.window, this.correction, target, now, { span: this.scope.span });
  }

  override exceeds(admission: Admission): number | undefined {
    // Expected output is charged at most the limit: the upstream refuses output only when empty.
    return this.estimate !== undefined ? undefined : super.exceeds(admission);
  }

  /**
   * Correct by the upstream's count: where we count more, the excess leaves our window, oldest
   * first (a correction fading at another pace than our usage slides out would soon count too
   * little); where it counts more (someone else's usage), a correction holds the difference.
   */
  anchor(reported: ReportedLimit, context: Anchoring): void {
    if (!takeReported(this.limit, reported, context, this.scope)) return;
    const { now, peer } = context;
    // Another instance's reading is of the moment its call was sent: ours is what we sent before.
    const local = peer ? this.window.before(context.sentAt, now) : this.window.at(now);
    // The upstream had counted every call sent before the answered one, and none sent after it.
    const own = context.own;
    const counted = this.limit.value - reported.remaining;
    // Output counted at the answer's end is not in the count of its own answer's headers.
    const charge = own === undefined || this.estimate !== undefined ? 0 : this.charge(own);
    const byArrival =
      counted - Math.max(0, local - (peer ? 0 : Math.max(0, this.inFlight - charge)));
    const after = peer ? undefined : own && this.order.after(own, charge);
    const delta =
      after === undefined ? byArrival : agreed(counted - Math.max(0, local - after), byArrival);
    if (delta < 0 && this.window.bucketMs !== 0) {
      this.window.trimOldest(-delta, now);
      this.correction.take(0, now);
      return;
    }
    this.correction.take(delta, now);
  }
}

import { chargeOf, roomLeft, type Admission, type ChargeUnit } from './admission';
import type { Anchoring, CounterScope, LimitCounter } from './limit-counter';
import { Correction } from './correction';
import type { UsageCount } from './drain-count';
import type { QuotaLimit } from './quota-limit';
import type { Ramp, RampedUnit } from './ramp';
import type { ReportedLimit } from './rate-limit-headers';
import { SendOrder } from './send-order';

/**
 * A counter that keeps its own usage of one limit (all but the burst counter, which reads the
 * requests counter's window): the limit, this instance's count of it, the correction the
 * upstream's headers call for, the calls in flight and the order they were sent in. It charges
 * calls by the one charge rule, settles and gives back its own count, and answers room, share
 * and the time its share changes from usage plus correction.
 *
 * @example
 * ```ts
 * const counter: UsageCounter = ledger.tokens;
 * counter.used(now); // usage as the upstream is believed to count it
 * ```
 */
export abstract class UsageCounter implements LimitCounter {
  /** What the upstream counts beyond ours, as its headers said. */
  readonly correction = new Correction();
  /**
   * This counter's charge of calls sent and not yet answered (the ledger adds to it when it
   * prices a call in flight again).
   */
  inFlight = 0;
  /** The order calls were sent in: an answer is matched to what was sent before its call. */
  readonly order: SendOrder;
  /** Where the rules ramp this limit's bucket (see {@link Ramp}): our own count stays within its step. */
  ramp: Ramp | undefined = undefined;

  constructor(
    readonly limit: QuotaLimit,
    /** This instance's usage, its own: a `WindowCount`, or a `DrainCount` where usage drains. */
    readonly window: UsageCount,
    readonly unit: ChargeUnit,
    protected readonly scope: CounterScope,
  ) {
    this.order = new SendOrder(unit);
  }

  charge(admission: Admission): number {
    return chargeOf(this.unit, admission.input, admission.output);
  }

  /** The charge of `admission` when it is above the limit itself (it can never fit). */
  exceeds(admission: Admission): number | undefined {
    const charge = this.charge(admission);
    return this.limit.value > 0 && charge > this.limit.value ? charge : undefined;
  }

  /** Usage the correction adds to: this instance's own. */
  counted(now: number): number {
    return this.window.at(now);
  }

  /** Usage at `now` by the anchored view, never below 0. */
  used(now: number): number {
    return Math.max(0, this.counted(now) + this.correction.at(now, this.scope.span));
  }

  room(now: number, admission?: Admission): number {
    const value = this.limit.value;
    if (value <= 0) return Infinity;
    const used = this.counted(now) + this.correction.at(now, this.scope.span);
    const room = roomLeft(value, used, admission);
    const ramp = this.ramp;
    if (ramp === undefined) return room;
    const step = ramp.room(this.unit as RampedUnit, value, this.window.at(now), now);
    return step < room ? step : room;
  }

  share(now: number): number {
    const value = this.limit.value;
    if (value <= 0) return 0;
    // Routing leaves others the room their pace will take before the window ends.
    const used = this.used(now) + this.correction.expected(now, this.scope.span);
    return used > 0 ? used / value : 0;
  }

  changesAt(now: number): number {
    const lapse = this.limit.changesAt;
    if (this.limit.value <= 0) return lapse;
    const at = Math.min(this.correction.changesAt(now), this.window.changesAt(now), lapse);
    return this.ramp === undefined
      ? at
      : Math.min(at, this.ramp.changesAt(this.window.at(now), now));
  }

  wait(admission: Admission, now: number): number {
    const wait = this.limitWait(admission, now);
    const ramp = this.ramp;
    const value = this.limit.value;
    if (ramp === undefined || value <= 0) return wait;
    const step = ramp.wait(
      this.unit as RampedUnit,
      value,
      this.window.at(now),
      this.charge(admission),
      now,
    );
    return step > wait ? step : wait;
  }

  /** ms until `admission` fits the limit as usage slides out and corrections end (0 when unlimited). */
  protected abstract limitWait(admission: Admission, now: number): number;

  admit(admission: Admission, now: number): void {
    const charge = this.charge(admission);
    this.window.add(charge, now);
    this.inFlight += charge;
    this.order.sent(admission, charge);
    this.ramp?.admitted(this.unit as RampedUnit, charge, now);
  }

  answered(admission: Admission): void {
    this.inFlight = Math.max(0, this.inFlight - this.charge(admission));
  }

  settle(input: number, output: number, now: number): void {
    const change = chargeOf(this.unit, input, output, 0);
    if (change !== 0) this.window.add(change, now);
  }

  catchUp(_now: number): void {
    // Usage slides out or drains by itself; a counter that knows the upstream's window end forgets more.
  }

  /** Correct by the upstream's count of this limit in an answer's reading. */
  abstract anchor(reported: ReportedLimit, context: Anchoring): void;

  reset(): void {
    this.window.reset();
    this.correction.clear();
    this.order.reset();
  }
}

import { chargeOf, roomLeft, type Admission } from './admission';
import { DrainCount } from './drain-count';
import type { LimitCounter } from './limit-counter';
import type { QuotaLimit } from './quota-limit';
import type { ReportedLimit } from './rate-limit-headers';
import { shortLimit, type RequestWindow } from './request-window';

/**
 * The requests of a bucket upstream (OpenAI, Anthropic) over an interval shorter than its minute:
 * both say a per-minute request limit "may be enforced over shorter time intervals" (60 RPM as one
 * a second), which no header shows. Counted as a bucket of that interval's share of `rpm`,
 * refilled at `rpm` a minute, as the upstream would enforce it.
 *
 * With the interval configured (`requestWindow`) or learned (a 429 for requests while the minute's
 * count had room), the bucket holds that share. Before either, it ramps: it starts at one second's
 * share plus one request (the probe: at most one call meets the 429 that teaches the second); a
 * step that filled and was answered without one widens it to the minute's bucket, where it stops
 * counting. A cold start, a restart or a queue's backlog so go out in growing
 * bursts, not a whole bucket in one instant; so do the first calls after `idleMs` without one
 * (the token ramp's idle spell, when the model ramps), which start the step again.
 *
 * @example
 * ```ts
 * const short = new ShortBucketCounter(rpm, clock);
 * short.period = '1s'; // 600 RPM: 10 requests at once, then one per 100 ms
 * ```
 */
export class ShortBucketCounter implements LimitCounter {
  readonly unit = 'requests';
  /** Requests the bucket holds while ramping; 0 before the first (it follows a learned `rpm`). */
  private ramp = 0;
  /** The interval, once configured or learned; `undefined` while ramping. */
  private interval: RequestWindow | undefined = undefined;
  /** Calls sent and answered while ramping, and how many had been sent when the step filled. */
  private sent = 0;
  private ended = 0;
  private filledAt = 0;
  private refusedStep = false;
  /** When the last call was sent (-Infinity: never). */
  private lastSend = -Infinity;
  private readonly count: DrainCount;

  constructor(
    private readonly rpm: QuotaLimit,
    clock: () => number,
    /** After this long without a call, the step starts again (Infinity: never, once widened). */
    private readonly idleMs = Infinity,
  ) {
    this.count = new DrainCount(() => this.rpm.value, clock);
  }

  /** The interval requests are enforced over: `'1s'` / `'10s'`, or `undefined` while ramping. */
  get period(): RequestWindow | undefined {
    return this.interval;
  }

  /** Enforce requests over `window` from now on (configured, or learned from a 429). */
  set period(window: RequestWindow | undefined) {
    this.interval = window;
    this.ramp = 0;
    this.refusedStep = false;
  }

  /** Requests the bucket holds now: the interval's share of `rpm`, or the ramp's step. */
  get limit(): number {
    const rpm = this.rpm.value;
    if (this.interval !== undefined) return shortLimit(rpm, this.interval);
    if (this.ramp === 0) this.ramp = shortLimit(rpm, '1s') + 1;
    return this.ramp;
  }

  /** True with an `rpm` while the bucket holds less than the minute's. */
  get active(): boolean {
    const rpm = this.rpm.value;
    return rpm > 0 && this.limit < rpm;
  }

  /** Requests in the bucket at `now`. */
  used(now: number): number {
    return this.count.at(now);
  }

  charge(admission: Admission): number {
    return chargeOf(this.unit, admission.input, admission.output);
  }

  room(now: number, admission?: Admission): number {
    this.rearm(now);
    return this.active ? roomLeft(this.limit, this.used(now), admission) : Infinity;
  }

  share(now: number): number {
    this.rearm(now);
    if (!this.active) return 0;
    // A ramp's step holds calls back without saying the upstream is full: the minute's bucket does.
    return this.used(now) / (this.interval === undefined ? this.rpm.value : this.limit);
  }

  changesAt(now: number): number {
    this.rearm(now);
    return this.active ? this.count.changesAt(now) : Infinity;
  }

  wait(admission: Admission, now: number): number {
    this.rearm(now);
    if (!this.active) return 0;
    const target = roomLeft(this.limit, 0, admission) - this.charge(admission);
    return this.count.timeUntil(target, Infinity, now);
  }

  admit(_admission: Admission, now: number): void {
    this.rearm(now);
    this.lastSend = now;
    this.count.add(1, now);
    if (this.interval !== undefined || !this.active) return;
    this.sent += 1;
    // Full once no further request fits (it drains a little between sends).
    if (this.filledAt === 0 && this.count.at(now) > this.limit - 1) this.filledAt = this.sent;
  }

  answered(): void {
    if (this.interval === undefined) this.ended += 1;
  }

  /**
   * A call was answered (not refused): once as many answers came as calls had been sent when the
   * step filled, and none met a 429 for requests, the upstream does not enforce the second, and
   * the bucket is the minute's alone (calls keep going out while a step's answers come back, in
   * any order).
   */
  confirmed(): void {
    if (this.interval !== undefined || this.filledAt === 0 || this.refusedStep) return;
    if (this.ended < this.filledAt) return;
    // A second's share and one more went at once: not a second, then. The shorter interval both
    // vendors document is the second ("60 RPM as 1 a second", "60,000 RPM as 1,000 a second"): no
    // ten seconds' step after it, which held a minute's burst back for nothing.
    this.ramp = this.rpm.value;
    this.sent -= this.filledAt;
    this.ended -= this.filledAt;
    this.filledAt = 0;
  }

  /**
   * Idle for longer than `idleMs` without a known interval: the next calls are a cold start's
   * again (Anthropic's acceleration limits), from one second's share and one more.
   */
  private rearm(now: number): void {
    if (this.interval !== undefined || this.ramp === 0 || now - this.lastSend <= this.idleMs)
      return;
    this.ramp = 0;
    this.sent = 0;
    this.ended = 0;
    this.filledAt = 0;
  }

  /**
   * The upstream refused a call for its request limit at `now` while the minute's count had
   * room: it enforces requests per second. Returns true when that is news.
   */
  refused(now: number): boolean {
    if (this.interval === '1s') return false;
    this.interval = '1s';
    this.refusedStep = true;
    // The refused call is not in the upstream's count; ours holds what a second allows, at most.
    const over = this.count.at(now) - this.limit;
    if (over > 0) this.count.trimOldest(over, now);
    return true;
  }

  settle(): void {
    // A call stays one request.
  }

  catchUp(): void {
    // The bucket drains by itself.
  }

  /** No header speaks of this interval: the minute's bucket takes the requests header. */
  claims(_reported: ReportedLimit): boolean {
    return false;
  }

  anchor(): void {
    // See claims.
  }

  reset(): void {
    this.count.reset();
  }
}

import { usable, type Admission } from './admission';
import type { Anchoring, CounterScope, LimitCounter } from './counter';
import { REQUESTS } from './hot-row';
import { recentRequests } from './peer-usage';
import { QuotaLimit } from './quota-limit';
import type { ReportedLimit } from './rate-limit-headers';
import type { CountWindow } from './count-window';

/**
 * The requests of Azure's short window: it enforces RPM as `rpm / 6` per 10 s, so a burst fills
 * that long before the minute does. Counted over the newest sixth of a sliding usage window
 * (ours, and the peers' by when they sent), corrected by an answer whose requests header speaks
 * of that window (its limit says `rpm / 6`); inactive without a sliding window or an `rpm`.
 *
 * @example
 * ```ts
 * const burst = new BurstCounter(rpm, requests.window, scope);
 * burst.limit; // rpm / 6, at least 1
 * ```
 */
export class BurstCounter implements LimitCounter {
  /** Correction of the newest sixth's requests; it fades within a sixth of the window. */
  readonly correction = new QuotaLimit('rpm', undefined);
  /** Requests sent and not yet answered. */
  private inFlight = 0;
  readonly hotColumn = REQUESTS;

  constructor(
    /** The per-minute limit this window is a sixth of. */
    private readonly rpm: QuotaLimit,
    /**
     * This instance's requests: the requests counter's window, whose newest sixth this counts.
     * Azure's 10 s windows nest in its minute, so what the minute forgets when it rolls, they
     * forget too; and a call is charged once, not once per window.
     */
    private readonly window: CountWindow,
    private readonly scope: CounterScope,
  ) {}

  /** Requests the upstream allows in a sixth of the window: `rpm / 6`, at least 1. */
  get limit(): number {
    const burst = Math.floor(this.rpm.value / 6);
    return burst > 1 ? burst : 1;
  }

  /** True with a sliding window and an `rpm`: only then is the newest sixth counted apart. */
  get active(): boolean {
    return this.window.bucketMs !== 0 && this.rpm.value > 0;
  }

  /** Requests of the newest sixth at `now` by the anchored view (ours and the peers'). */
  used(now: number): number {
    return (
      this.window.recentAt(now) +
      this.peersRecent(now) +
      this.correction.correction(now, this.scope.span / 6)
    );
  }

  fits(admission: Admission, now: number): boolean {
    return !this.active || this.used(now) + 1 <= usable(this.limit, admission);
  }

  room(now: number): number {
    return this.active ? this.limit - this.used(now) : Infinity;
  }

  share(now: number): number {
    return this.active ? this.used(now) / this.limit : 0;
  }

  changesAt(now: number): number {
    if (!this.active) return Infinity;
    return Math.min(this.correction.changesAt(now), this.window.changesAt(now));
  }

  wait(admission: Admission, now: number): number {
    if (!this.active) return 0;
    const sixth = this.scope.span / 6;
    const c = Math.max(0, this.correction.correction(now, sixth));
    const target = usable(this.limit, admission) - 1 - c - this.peersRecent(now);
    const w = this.window.timeUntil(Infinity, target, now);
    // A correction of the newest sixth fades out within a sixth of the window.
    return Math.min(w, c > 0 ? sixth : w);
  }

  admit(): void {
    // Charged to the requests counter's window, which it reads.
    this.inFlight += 1;
  }

  admitted(): void {
    this.inFlight += 1;
  }

  answered(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
  }

  catchUp(): void {
    // Its correction fades by itself; the usage window forgets the rest.
  }

  /**
   * True when a requests header speaks of this window rather than the minute: its limit is
   * `rpm / 6` (or, without one, what is left fits in it).
   */
  claims(reported: ReportedLimit): boolean {
    if (!this.active) return false;
    const limit = this.limit;
    return reported.limit !== undefined
      ? reported.limit === limit && reported.limit !== this.rpm.value
      : (reported.remaining ?? 0) <= limit;
  }

  /**
   * Correct by the upstream's count of the window, our own answers only: another instance's
   * reading comes when that window has mostly gone by.
   */
  anchor(reported: ReportedLimit, context: Anchoring): void {
    if (reported.remaining === undefined || context.peer !== undefined) return;
    const { now } = context;
    this.scope.reported.rpm = { remaining: reported.remaining, at: now };
    const inFlight = Math.max(0, this.inFlight - (context.own === undefined ? 0 : 1));
    const recent = this.window.recentAt(now);
    this.correction.anchor(this.limit - reported.remaining - (recent - inFlight), now);
  }

  reset(): void {
    this.correction.clear();
  }

  /**
   * The peers' requests of the newest sixth at `now`: by send time when it is known (the span
   * the sixth starts inside in proportion, as the upstream's 10 s windows do not start where
   * ours do), else as the store counted them.
   */
  private peersRecent(now: number): number {
    const peers = this.scope.peers;
    if (peers === undefined) return 0;
    if (peers.sent === undefined) return peers.recentRequests ?? 0;
    return recentRequests(peers.sent.spans, now - this.scope.span / 6);
  }
}

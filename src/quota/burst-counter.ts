import { chargeOf, roomLeft, type Admission } from './admission';
import type { Anchoring, CounterScope, LimitCounter } from './limit-counter';
import { Correction } from './correction';
import { recentRequests } from './peer-usage';
import type { QuotaLimit } from './quota-limit';
import { shortLimit, type RequestWindow } from './request-window';
import type { ReportedLimit } from './rate-limit-headers';
import type { WindowCount } from './window-count';
import { agreed, type SendOrder } from './send-order';

/**
 * The requests of Azure's short window: it enforces RPM as `rpm / 6` per 10 s (or `rpm / 60` per
 * 1 s, `requestWindow`), so a burst fills that long before the minute does. Counted over the
 * newest sixth (or sixtieth) of a sliding usage window (ours, and the peers' by when they sent),
 * corrected by an answer's requests header, which speaks of that window; inactive without a
 * sliding window or an `rpm`.
 *
 * @example
 * ```ts
 * const burst = new BurstCounter(rpm, requests.window, scope);
 * burst.limit; // rpm / 6, at least 1
 * ```
 */
export class BurstCounter implements LimitCounter {
  /** Correction of the newest sixth's requests; it fades within a sixth of the window. */
  readonly correction = new Correction();
  /** Requests sent and not yet answered. */
  private inFlight = 0;
  /** Short windows in the usage window: 6 for Azure's 10 s, 60 for its 1 s. */
  private windows = 6;

  constructor(
    /** The per-minute limit this window is a sixth of. */
    private readonly rpm: QuotaLimit,
    /**
     * This instance's requests: the requests counter's window, whose newest sixth this counts.
     * Azure's 10 s windows nest in its minute, so what the minute forgets when it rolls, they
     * forget too; and a call is charged once, not once per window.
     */
    private readonly window: WindowCount,
    private readonly scope: CounterScope,
    /** The order the requests counter saw calls sent in (each is one request there too). */
    private readonly order: SendOrder,
  ) {}

  /** The window the upstream enforces requests over. */
  get period(): RequestWindow {
    return this.windows === 60 ? '1s' : '10s';
  }

  /** Enforce requests over `window` from now on (what was counted stays). */
  set period(window: RequestWindow) {
    const windows = window === '1s' ? 60 : 6;
    if (windows === this.windows) return;
    this.windows = windows;
    this.correction.clear();
    this.window.divideRecent(windows);
  }

  /** Requests the upstream allows in its short window: `rpm / 6` (or `rpm / 60`), at least 1. */
  get limit(): number {
    return shortLimit(this.rpm.value, this.period);
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
      this.correction.at(now, this.scope.span / this.windows)
    );
  }

  readonly unit = 'requests';

  charge(admission: Admission): number {
    return chargeOf(this.unit, admission.input, admission.output);
  }

  room(now: number, admission?: Admission): number {
    return this.active ? roomLeft(this.limit, this.used(now), admission) : Infinity;
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
    const short = this.scope.span / this.windows;
    const c = Math.max(0, this.correction.at(now, short));
    const target =
      roomLeft(this.limit, c + this.peersRecent(now), admission) - this.charge(admission);
    const w = this.window.timeUntil(Infinity, target, now);
    // A correction of the short window fades out within it.
    return Math.min(w, c > 0 ? short : w);
  }

  admit(): void {
    // Charged to the requests counter's window, which it reads.
    this.inFlight += 1;
  }

  answered(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
  }

  settle(): void {
    // A call stays one request, counted in the requests counter's window.
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
    // The upstream had counted every call sent before the answered one, and none sent after it.
    const own = context.own;
    const counted = this.limit - reported.remaining;
    const recent = this.window.recentAt(now);
    const inFlight = Math.max(0, this.inFlight - (own === undefined ? 0 : 1));
    const byArrival = counted - Math.max(0, recent - inFlight);
    const after = own && this.order.after(own, 1);
    const delta =
      after === undefined ? byArrival : agreed(counted - Math.max(0, recent - after), byArrival);
    this.correction.take(delta, now);
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
    if (peers.spans === undefined) return peers.recentRequests ?? 0;
    return recentRequests(peers.spans, now - this.scope.span / this.windows);
  }
}

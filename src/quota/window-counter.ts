import { roomLeft, type Admission } from './admission';
import { takeReported, waitFor, type Anchoring, type CounterScope } from './limit-counter';
import { PeerSum, sentAfter, type SpanColumn } from './peer-usage';
import type { QuotaLimit } from './quota-limit';
import { readResetBound, type ReportedLimit } from './rate-limit-headers';
import type { UsageCount } from './drain-count';
import { agreed } from './send-order';
import { UsageCounter } from './usage-counter';
import { WindowEnd } from './window-end';

/**
 * What the tokens and the requests counters share ({@link TokensCounter} for `tpm`,
 * {@link RequestsCounter} for `rpm`): this instance's usage in its own window, the peers' usage
 * for the limit, the correction from the upstream's `x-ratelimit-remaining-*` header, and Azure's
 * fixed window: when it ends ({@link WindowEnd}, from the reset headers) the upstream forgets all
 * it counted, and so does the counter, except what may have reached the next window. OpenAI's
 * limits are buckets instead: usage drains (a `DrainCount`), no window ends, and its reset
 * header ("full again in") says nothing the drain does not.
 *
 * @example
 * ```ts
 * const tokens: WindowCounter = new TokensCounter(tpm, new WindowCount(clock), scope);
 * tokens.room(now); // the largest token charge that fits now
 * ```
 */
export abstract class WindowCounter extends UsageCounter {
  /** What it counts: tokens or requests. */
  declare readonly unit: 'tokens' | 'requests';

  /** When the upstream's current window ends. */
  readonly end = new WindowEnd();
  /**
   * Send time before which the upstream's window that last ended forgot everything: the peers'
   * usage sent before it no longer counts, nor does a peer's reading of a call sent before it.
   */
  rolledAt = 0;
  /** Send time of the call whose answer was last anchored on (the upstream's count then held all sent before). */
  private anchoredAt = 0;
  /** Our count the last answer was compared against. */
  private local = 0;
  private readonly peerSum: PeerSum;
  private readonly spanColumn: SpanColumn;

  constructor(
    limit: QuotaLimit,
    /**
     * This instance's tokens (or requests), its own: a `WindowCount` (Azure OpenAI's windows), or
     * a `DrainCount` where the upstream's bucket refills continuously (OpenAI's).
     */
    window: UsageCount,
    unit: 'tokens' | 'requests',
    scope: CounterScope,
  ) {
    super(limit, window, unit, scope);
    this.spanColumn = unit === 'tokens' ? 2 : 3;
    this.peerSum = new PeerSum(this.spanColumn);
  }

  /** This instance's usage plus the peers' totals at `now` (for operators). */
  total(now: number): number {
    const own = this.window.at(now);
    const peers = this.scope.peers;
    if (peers === undefined) return own;
    return own + (this.unit === 'tokens' ? peers.tokens : peers.requests);
  }

  /** Usage the correction adds to: ours, plus the peers' the upstream's count does not hold yet. */
  override counted(now: number): number {
    const own = this.window.at(now);
    return this.scope.peers === undefined ? own : own + this.peersCounted();
  }

  override changesAt(now: number): number {
    const end = this.end.act !== 0 ? this.end.act : Infinity;
    return Math.min(super.changesAt(now), end);
  }

  protected limitWait(admission: Admission, now: number): number {
    const value = this.limit.value;
    if (value <= 0) return 0;
    const peers = this.scope.peers === undefined ? 0 : this.peersCounted();
    const target = roomLeft(value, peers, admission) - this.charge(admission);
    const { window, correction, scope, end } = this;
    return waitFor(window, correction, target, now, {
      span: scope.span,
      end: end.act,
      pending: this.inFlight,
    });
  }

  override catchUp(now: number): void {
    if (this.end.act === 0 || now < this.end.act) return;
    this.forget(this.end.due(now), now);
  }

  /**
   * The upstream's window ended: what was sent before `before` is forgotten, as the upstream
   * forgets it, calls still in flight excepted (they may land in the next window).
   */
  private forget(before: number, now: number): void {
    this.rolledAt = before;
    const old = this.window.before(before, now) - this.inFlight;
    if (old > 0) this.window.trimOldest(old, now);
  }

  /**
   * Correct by the upstream's count when it wrote the answer. Ours is this instance's usage plus
   * the peers' as far as the upstream's count holds it too, less the calls in flight it may not
   * have seen. Where we count more, the excess leaves our window, oldest first (the upstream's
   * window rolled since we charged it); where it counts more (someone else's usage), a correction
   * holds the difference until the window ends, and others' usage so far is taken as their pace.
   * Another instance's reading is of the moment its call was sent: ours is then what we sent
   * before it, and nothing of ours was in flight.
   */
  anchor(reported: ReportedLimit, context: Anchoring): void {
    if (!takeReported(this.limit, reported, context, this.scope)) return;
    const { now, peer } = context;
    const remaining = reported.remaining;
    const sliding = this.window.bucketMs !== 0;
    let delta = this.delta(remaining, context);
    // The end is read while it can still narrow, and again when others' usage shows (to tell
    // their pace): each header lookup costs about a µs. An answer of a later window rolls first.
    if (
      sliding &&
      this.window.drains !== true &&
      (delta > 0 || this.end.wants(now)) &&
      this.takeEnd(remaining, reported, context)
    ) {
      delta = this.delta(remaining, context);
    }
    if (delta < 0 && sliding) {
      // Only this instance's share of the excess is its own to forget.
      const local = this.local;
      const mine = peer ? this.window.before(context.sentAt, now) : this.window.at(now);
      const excess = local > 0 ? (-delta * mine) / local : 0;
      this.window.trimOldest(excess, now);
      this.correction.take(0, now);
      return;
    }
    let until = 0;
    let pace = 0;
    if (delta > 0 && sliding && this.end.known) {
      until = this.end.act;
      // With a shared view, the others that matter are in it: a difference is its lag.
      if (this.scope.peers === undefined && context.paceOk) {
        // Others' pace so far, read over at least a quarter of the window.
        const span = this.scope.span;
        const elapsed = Math.max(span / 4, span - (until - now));
        pace = Math.min(this.limit.value, (delta * span) / elapsed) / span;
      }
    }
    this.correction.take(delta, now, until, pace);
  }

  /**
   * The upstream's count when it wrote the answer, less ours of the same calls (kept in
   * {@link local}): the upstream had counted every call sent before the answered one, and none
   * sent after it, answered or not, as far as our count less the calls in flight (which it may
   * not have seen) agrees ({@link agreed}). An answer to a call this counter did not send is
   * compared with ours less the calls in flight alone.
   */
  private delta(remaining: number, context: Anchoring): number {
    const local = (this.local = this.anchorCount(context));
    const { own, peer } = context;
    const counted = this.limit.value - remaining;
    if (peer) return counted - local;
    const charge = own === undefined ? 0 : this.charge(own);
    const byArrival = counted - Math.max(0, local - Math.max(0, this.inFlight - charge));
    const after = own && this.order.after(own, charge);
    return after === undefined
      ? byArrival
      : agreed(counted - Math.max(0, local - after), byArrival);
  }

  /**
   * Take what a reading says of when the upstream's window ends: our own answer's reset header
   * (bounded by its precision), or the end another instance knew. An answer of a later window
   * ends the held one now, when the upstream's count shows it (it holds less than what we sent
   * before that end: clocks apart can make a reading look later than it is). Returns true when
   * it forgot what the held window counted.
   */
  private takeEnd(remaining: number, reported: ReportedLimit, context: Anchoring): boolean {
    const { now, sentAt, peer } = context;
    let low: number;
    let high: number;
    let act: number;
    if (peer !== undefined) {
      const until = this.unit === 'tokens' ? peer.tokensEnd : peer.requestsEnd;
      if (!(until > now)) return false;
      // The call was on its way for `at - sentAt`: the upstream's end, on our clock, as sent.
      low = high = until - (peer.at - peer.sentAt);
      act = until;
    } else {
      const headers = context.headers;
      const reset = reported.reset ?? (headers && readResetBound(headers, this.unit));
      if (reset === undefined || !(reset.ms > 0)) return false;
      // The upstream wrote the header when the call reached it: on our clock, about when we sent it.
      high = sentAt + reset.ms;
      low = reset.grain > 1 ? high - reset.grain : high;
      act = now + reset.ms;
    }
    // A later window ends at least a window after this one: a quarter of it tells jitter apart.
    const ended = this.end.take(low, high, act, now, this.scope.span / 4);
    if (ended === 0) return false;
    // Calls in flight may not be in its count; the answered one is.
    const own = context.own === undefined ? 0 : this.charge(context.own);
    const before = this.window.before(ended, now) - (this.inFlight - own);
    if (this.limit.value - remaining >= before) return false;
    this.forget(ended, now);
    return true;
  }

  /**
   * The count an answer to a call sent at `sentAt` is compared against. When the peers' usage
   * says when it was sent, only theirs sent after that call counts from now on, and the count is
   * this instance's alone (for another instance's answer: ours sent before it, and the part of
   * that instance's call the peers' usage counts as sent after it); else ours plus the peers'.
   */
  private anchorCount(context: Anchoring): number {
    const { now, sentAt, peer } = context;
    const peers = this.scope.peers;
    const timed = peers?.spans !== undefined;
    if (timed) this.anchoredAt = sentAt;
    if (peer !== undefined) {
      const before = this.window.before(sentAt, now);
      const amount = this.unit === 'tokens' ? peer.tokens : 1;
      return before + sentAfter(peers!.spans!, sentAt, amount, this.spanColumn);
    }
    return timed ? this.window.at(now) : this.counted(now);
  }

  /** The peers' usage the upstream is believed to count on top of ours. */
  peersCounted(): number {
    const peers = this.scope.peers!;
    if (peers.spans === undefined) return this.unit === 'tokens' ? peers.tokens : peers.requests;
    const from = this.anchoredAt > this.rolledAt ? this.anchoredAt : this.rolledAt;
    return this.peerSum.since(peers.spans, from);
  }

  override reset(): void {
    super.reset();
    this.end.clear();
    this.rolledAt = this.anchoredAt = 0;
  }
}

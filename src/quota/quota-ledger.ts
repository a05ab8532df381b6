import type { ModelConfig } from '../types';
import type { Admission, ChargePolicy, TokenUsage } from './admission';
import {
  HeaderAnchor,
  type LimitListener,
  type ReportedRemaining,
  type SharedReading,
} from './header-anchor';
import { QuotaLimit, type LimitName } from './quota-limit';
import type { HeaderSource, RateLimitFamily } from './rate-limit-headers';
import { UsageWindow } from './usage-window';

/**
 * Usage other switchboard instances reported (shared state stores fill it in).
 *
 * @example
 * ```ts
 * // 4 000 tokens and 12 requests sent by the others in the second that starts at t0
 * ledger.shared = { tokens: 4_000, requests: 12, sent: { spans: [t0, t0 + 1000, 4_000, 12] } };
 * ```
 */
export interface SharedUsage {
  tokens: number;
  requests: number;
  /** Requests in the newest sixth of the window, weighed against `rpm / 6` as the own ones are. */
  recentRequests?: number;
  /**
   * The same usage by when it was sent, when the store knows it: `spans` holds
   * `[start, end, tokens, requests, ...]` (epoch ms), one quadruple per span of send times, and
   * a store replaces the array when the usage changes. With it, the others' usage the upstream's
   * own count already holds (sent before the answer the ledger last anchored on was written) or
   * has forgotten (sent before its window last ended) is left out: `tokens` and `requests` are
   * then only the totals, for operators.
   */
  sent?: { spans: readonly number[] };
}

/** The others' usage in one kind of limit, as counted from a send time on. */
interface OthersSince {
  /** The spans it was summed from (a new array = new usage). */
  spans: readonly number[] | undefined;
  /** Send time from which it counts. */
  from: number;
  sum: number;
}

/** Options of a {@link QuotaLedger} beyond its limits. */
export interface QuotaLedgerOptions {
  /** How the upstream reconciles its admission charge; default `reserve` (Azure OpenAI). */
  charge?: ChargePolicy;
  /** Whose rate-limit headers its answers carry; default both are looked for. */
  headers?: RateLimitFamily;
  /** Told when a limit is learned from the headers, or corrected by them. */
  onLimit?: LimitListener;
}

/** Span of the anchoring correction when usage is counted in a fixed window. */
const DEFAULT_SPAN = 60_000;

/**
 * The quota accounting of one model on one deployment: usage in {@link UsageWindow}s (tokens and
 * requests, input and output tokens apart), the calls in flight, the four {@link QuotaLimit}s
 * (configured or learned), and the anchoring on the upstream's rate-limit headers. It answers
 * whether a call's admission charge fits ({@link hasRoom}), when it will ({@link roomAt}) and how
 * full the model is ({@link util}); cooldowns are its owner's business.
 *
 * Every operation reads the clock at most once and passes that reading down: a clock read costs
 * about as much as the arithmetic, and routing asks these questions on every call. The methods
 * that take `now` (epoch ms) let an owner that already read the clock share its reading.
 *
 * @example
 * ```ts
 * const ledger = new QuotaLedger({ tpm: 10_000, rpm: 60 }, Date.now);
 * ledger.slide(60_000);
 * const call = { input: 1200, output: 256 };
 * if (ledger.hasRoom(call)) ledger.admit(call);
 * ledger.settle(call, { input: 1180, output: 97 });
 * ```
 */
export class QuotaLedger {
  /** The limits in force, configured or learned. */
  readonly limits: Readonly<Record<LimitName, QuotaLimit>>;
  /** How the upstream reconciles its admission charge. */
  readonly charge: ChargePolicy;
  /** Tokens and requests counted by this instance. */
  readonly usage: UsageWindow;
  /** Input and output tokens apart, where `itpm` / `otpm` apply (Claude on Foundry). */
  readonly inputUsage: UsageWindow;
  readonly outputUsage: UsageWindow;
  /** Usage seen by other instances since the last sync; written by a shared state store. */
  shared: SharedUsage | undefined;
  /** Correction of the requests of the newest sixth of the window (Azure's rpm / 6 per 10 s). */
  readonly burstAnchor = new QuotaLimit('rpm', undefined);
  private readonly anchoring: HeaderAnchor;
  private readonly tpmLimit: QuotaLimit;
  private readonly rpmLimit: QuotaLimit;
  private readonly itpmLimit: QuotaLimit;
  private readonly otpmLimit: QuotaLimit;
  /** Length of the window the corrections fade over. */
  private span = DEFAULT_SPAN;
  /**
   * When the upstream's current token / request window ends (epoch ms; 0 = not known), from its
   * `x-ratelimit-reset-*` headers: then what was sent before `*Forget` is forgotten.
   */
  private tokenRoll = 0;
  private requestRoll = 0;
  private tokenForget = 0;
  private requestForget = 0;
  /**
   * Send time from which the others' usage counts (when {@link SharedUsage.sent} says when it was
   * sent), per kind: the later of when the answer last anchored on was written (the upstream's
   * count then held all sent before) and when the upstream's window last ended (it forgot all
   * sent before).
   */
  private tokensAnchoredAt = 0;
  private requestsAnchoredAt = 0;
  private tokensRolledAt = 0;
  private requestsRolledAt = 0;
  private readonly othersTokens: OthersSince = { spans: undefined, from: 0, sum: 0 };
  private readonly othersRequests: OthersSince = { spans: undefined, from: 0, sum: 0 };

  constructor(
    limits: Pick<ModelConfig, 'tpm' | 'rpm' | 'itpm' | 'otpm'>,
    private readonly clock: () => number = Date.now,
    options: QuotaLedgerOptions = {},
  ) {
    this.charge = options.charge ?? 'reserve';
    this.anchoring = new HeaderAnchor(clock, options.headers, options.onLimit);
    this.usage = new UsageWindow(clock);
    this.inputUsage = new UsageWindow(clock);
    this.outputUsage = new UsageWindow(clock);
    this.tpmLimit = new QuotaLimit('tpm', limits.tpm);
    this.rpmLimit = new QuotaLimit('rpm', limits.rpm);
    this.itpmLimit = new QuotaLimit('itpm', limits.itpm);
    this.otpmLimit = new QuotaLimit('otpm', limits.otpm);
    this.limits = Object.freeze({
      tpm: this.tpmLimit,
      rpm: this.rpmLimit,
      itpm: this.itpmLimit,
      otpm: this.otpmLimit,
    });
  }

  /** Requests the upstream allows in a sixth of the window: Azure's rpm / 6 per 10 s, at least 1. */
  get burstLimit(): number {
    const burst = Math.floor(this.rpmLimit.value / 6);
    return burst > 1 ? burst : 1;
  }

  /**
   * Count usage over a sliding window of `windowMs` instead of a fixed one that only
   * {@link reset} clears (`0` switches back); see {@link UsageWindow}. {@link util} then also
   * weighs the requests of the newest sixth of the window against `rpm / 6`. Usage stays.
   */
  slide(windowMs: number, buckets = 120): void {
    const kind = windowMs > 0 ? 'sliding' : 'fixed';
    this.usage.configure(kind, windowMs, buckets);
    this.inputUsage.configure(kind, windowMs, buckets);
    this.outputUsage.configure(kind, windowMs, buckets);
    this.span = windowMs > 0 ? windowMs : DEFAULT_SPAN;
  }

  /** Length (ms) of the window usage is counted over (the corrections' span in the fixed kind). */
  get windowMs(): number {
    return this.span;
  }

  /** When the upstream's current window for tokens / requests is known to end (epoch ms), or 0. */
  windowEnd(what: 'tokens' | 'requests'): number {
    return what === 'tokens' ? this.tokenRoll : this.requestRoll;
  }

  /**
   * The upstream's window ends: at `at` (when answers written after its end can have come back),
   * what was sent before `sentBefore` is forgotten, as the upstream forgets it.
   */
  windowEnds(what: 'tokens' | 'requests', at: number, sentBefore: number): void {
    if (what === 'tokens') {
      this.tokenRoll = at;
      this.tokenForget = sentBefore;
    } else {
      this.requestRoll = at;
      this.requestForget = sentBefore;
    }
  }

  /**
   * Forget what an upstream window that ended by `now` counted: what was sent before its end,
   * calls still in flight excepted (they may land in the next window).
   */
  catchUp(now: number): void {
    if (this.tokenRoll !== 0 && now >= this.tokenRoll) {
      this.tokenRoll = 0;
      this.tokensRolledAt = this.tokenForget;
      const before =
        this.usage.usageBefore(this.tokenForget, now).tokens - this.anchoring.inFlight.tokens;
      if (before > 0) this.usage.trimOldest(before, 0, now);
    }
    if (this.requestRoll !== 0 && now >= this.requestRoll) {
      this.requestRoll = 0;
      this.requestsRolledAt = this.requestForget;
      const before =
        this.usage.usageBefore(this.requestForget, now).requests - this.anchoring.inFlight.requests;
      if (before > 0) this.usage.trimOldest(0, before, now);
    }
  }

  /**
   * The upstream's answer to a call sent at `sentAt` counts everyone's usage sent before then:
   * when the shared view says when the others' usage was sent, only theirs sent later counts from
   * now on, and the count the answer's headers are compared against is this instance's alone;
   * else it is this instance's plus the shared view's. Returns that count at `now`.
   */
  anchorAt(
    what: 'tokens' | 'requests',
    sentAt: number,
    now: number,
    shared?: SharedReading,
  ): number {
    const timed = this.shared?.sent !== undefined;
    if (what === 'tokens') {
      if (timed) this.tokensAnchoredAt = sentAt;
      if (shared) {
        const before = this.usage.usageBefore(sentAt, now).tokens;
        return before + this.sentAfter(sentAt, shared.tokens, 2);
      }
      return timed ? this.usage.tokensAt(now) : this.countedTokens(now);
    }
    if (timed) this.requestsAnchoredAt = sentAt;
    if (shared) return this.usage.usageBefore(sentAt, now).requests + this.sentAfter(sentAt, 1, 3);
    return timed ? this.usage.requestsAt(now) : this.countedRequests(now);
  }

  /**
   * The part of one call of `amount` sent at `t` by another instance that the shared view counts
   * as sent after `t`: the span `t` falls in counts in proportion to its part after `t`.
   */
  private sentAfter(t: number, amount: number, at: 2 | 3): number {
    const spans = this.shared?.sent?.spans;
    if (spans === undefined || amount <= 0) return 0;
    for (let i = spans.length - 4; i >= 0; i -= 4) {
      const start = spans[i]!;
      const end = spans[i + 1]!;
      if (end <= t) break;
      if (start <= t && end > start) {
        return (Math.min(amount, spans[i + at]!) * (end - t)) / (end - start);
      }
    }
    return 0;
  }

  /** Tokens charged in the window at `now`: this instance's plus the shared view's. */
  tokensAt(now: number): number {
    const tokens = this.usage.tokensAt(now);
    return this.shared ? tokens + this.shared.tokens : tokens;
  }

  /** Requests charged in the window at `now`: this instance's plus the shared view's. */
  requestsAt(now: number): number {
    const requests = this.usage.requestsAt(now);
    return this.shared ? requests + this.shared.requests : requests;
  }

  /**
   * Tokens the anchored view adds its correction to: this instance's, plus the shared view's
   * that the upstream's count, as last anchored, does not hold already (see {@link SharedUsage.sent}).
   */
  private countedTokens(now: number): number {
    const tokens = this.usage.tokensAt(now);
    return this.shared ? tokens + this.sharedTokens() : tokens;
  }

  /** Requests the anchored view adds its correction to (see {@link countedTokens}). */
  private countedRequests(now: number): number {
    const requests = this.usage.requestsAt(now);
    return this.shared ? requests + this.sharedRequests() : requests;
  }

  /** The shared view's tokens the upstream is believed to count on top of ours (see {@link SharedUsage.sent}). */
  private sharedTokens(): number {
    const shared = this.shared!;
    if (shared.sent === undefined) return shared.tokens;
    const from = Math.max(this.tokensAnchoredAt, this.tokensRolledAt);
    return othersSince(this.othersTokens, shared.sent.spans, from, 2);
  }

  /**
   * The shared view's requests of the newest sixth of the window at `now`: by send time when it
   * is known (the span the sixth starts inside in proportion, as the upstream's 10 s windows do
   * not start where ours do), else as the store counted them.
   */
  private sharedRecent(now: number): number {
    const shared = this.shared!;
    if (shared.sent === undefined) return shared.recentRequests ?? 0;
    const spans = shared.sent.spans;
    const from = now - this.span / 6;
    let sum = 0;
    // Oldest first: the newest sixth is a few spans at the end.
    for (let i = spans.length - 4; i >= 0; i -= 4) {
      const start = spans[i]!;
      const end = spans[i + 1]!;
      if (end <= from) break;
      const v = spans[i + 3]!;
      sum += start >= from || end <= start ? v : (v * (end - from)) / (end - start);
    }
    return sum;
  }

  /** The shared view's requests the upstream is believed to count on top of ours. */
  private sharedRequests(): number {
    const shared = this.shared!;
    if (shared.sent === undefined) return shared.requests;
    const from = Math.max(this.requestsAnchoredAt, this.requestsRolledAt);
    return othersSince(this.othersRequests, shared.sent.spans, from, 3);
  }

  /** The upstream's last reported remaining per limit (only limits its headers reported). */
  get upstreamRemaining(): Readonly<Partial<Record<LimitName, ReportedRemaining>>> {
    return this.anchoring.upstreamRemaining;
  }

  /**
   * Usage per limit as the upstream is believed to count it at `now`: ours, plus the shared
   * view, plus the correction its last headers called for.
   */
  anchoredUsage(now = this.clock()): Record<LimitName, number> {
    if (this.tokenRoll !== 0 || this.requestRoll !== 0) this.catchUp(now);
    const span = this.span;
    return {
      tpm: Math.max(0, this.countedTokens(now) + this.tpmLimit.correction(now, span)),
      rpm: Math.max(0, this.countedRequests(now) + this.rpmLimit.correction(now, span)),
      itpm: Math.max(0, this.inputUsage.tokensAt(now) + this.itpmLimit.correction(now, span)),
      otpm: Math.max(0, this.outputUsage.tokensAt(now) + this.otpmLimit.correction(now, span)),
    };
  }

  /** `max(tokens / tpm, requests / rpm, ...)` over the anchored view; unlimited counts as 0. */
  util(now = this.clock()): number {
    if (this.tokenRoll !== 0 || this.requestRoll !== 0) this.catchUp(now);
    const tpm = this.tpmLimit.value;
    const rpm = this.rpmLimit.value;
    const span = this.span;
    let t = 0;
    if (tpm > 0) {
      // Routing leaves others the room their pace will take before the window ends.
      const used =
        this.countedTokens(now) +
        this.tpmLimit.correction(now, span) +
        this.tpmLimit.expected(now, span);
      t = used > 0 ? used / tpm : 0;
    }
    if (rpm > 0) {
      const used =
        this.countedRequests(now) +
        this.rpmLimit.correction(now, span) +
        this.rpmLimit.expected(now, span);
      let r = used > 0 ? used / rpm : 0;
      if (this.usage.bucketMs !== 0) {
        // Azure enforces RPM as rpm/6 per 10 s: a burst fills that long before the minute does.
        const burst = this.recentAt(now) / this.burstLimit;
        if (burst > r) r = burst;
      }
      if (r > t) t = r;
    }
    if (this.itpmLimit.value > 0 || this.otpmLimit.value > 0) {
      const io = this.ioShares(now);
      if (io > t) t = io;
    }
    return t;
  }

  /**
   * Each limit's share at `now`, by the anchored view: usage / limit, 0 when unlimited; for `rpm`
   * the larger of the window's share and the newest sixth's (against `rpm / 6`, with a sliding
   * window). {@link util} is the largest of them: what an operator sees per limit adds up to it.
   */
  shares(now = this.clock()): Record<LimitName, number> {
    const used = this.anchoredUsage(now);
    const share = (limit: QuotaLimit, u: number) =>
      limit.value > 0 && u > 0 ? u / limit.value : 0;
    // As in util: what others are expected to take before the window ends.
    used.tpm += this.tpmLimit.expected(now, this.span);
    let rpm = share(this.rpmLimit, used.rpm + this.rpmLimit.expected(now, this.span));
    const recent = this.recent(now);
    if (recent !== undefined && recent.used / recent.limit > rpm) rpm = recent.used / recent.limit;
    return {
      tpm: share(this.tpmLimit, used.tpm),
      rpm,
      itpm: share(this.itpmLimit, used.itpm),
      otpm: share(this.otpmLimit, used.otpm),
    };
  }

  /**
   * With a sliding window and an `rpm`: the requests of the newest sixth of the window by the
   * anchored view, and what the upstream allows there (`rpm / 6`); else `undefined`.
   */
  recent(now = this.clock()): { used: number; limit: number } | undefined {
    if (this.usage.bucketMs === 0 || this.rpmLimit.value <= 0) return undefined;
    return { used: this.recentAt(now), limit: this.burstLimit };
  }

  /** Requests of the newest sixth of the window by the anchored view (ours and the shared). */
  private recentAt(now: number): number {
    return (
      this.usage.recentRequestsAt(now) +
      (this.shared ? this.sharedRecent(now) : 0) +
      this.burstAnchor.correction(now, this.span / 6)
    );
  }

  private ioShares(now: number): number {
    let s = 0;
    const itpm = this.itpmLimit.value;
    if (itpm > 0) {
      s = (this.inputUsage.tokensAt(now) + this.itpmLimit.correction(now, this.span)) / itpm;
    }
    const otpm = this.otpmLimit.value;
    if (otpm > 0) {
      const o = (this.outputUsage.tokensAt(now) + this.otpmLimit.correction(now, this.span)) / otpm;
      if (o > s) s = o;
    }
    return s;
  }

  /** True when a call with this admission charge fits every limit at `now`, by the anchored view. */
  hasRoom(admission: Admission, now = this.clock()): boolean {
    if (this.tokenRoll !== 0 || this.requestRoll !== 0) this.catchUp(now);
    const tpm = this.tpmLimit.value;
    if (tpm > 0) {
      const used = this.countedTokens(now) + this.tpmLimit.correction(now, this.span);
      if (used + admission.input + admission.output > tpm) return false;
    }
    const rpm = this.rpmLimit.value;
    if (rpm > 0) {
      const used = this.countedRequests(now) + this.rpmLimit.correction(now, this.span);
      if (used + 1 > rpm) return false;
      if (this.usage.bucketMs !== 0 && this.recentAt(now) + 1 > this.burstLimit) return false;
    }
    const itpm = this.itpmLimit.value;
    if (itpm > 0) {
      const used = this.inputUsage.tokensAt(now) + this.itpmLimit.correction(now, this.span);
      if (used + admission.input > itpm) return false;
    }
    const otpm = this.otpmLimit.value;
    if (otpm > 0) {
      const used = this.outputUsage.tokensAt(now) + this.otpmLimit.correction(now, this.span);
      if (used + admission.output > otpm) return false;
    }
    return true;
  }

  /**
   * ms from `now` until a call with this admission charge has room as usage slides out (0 when
   * it has room now); `Infinity` when it never will (see {@link exceeds}). An upper bound:
   * corrections fade out sooner than it assumes.
   */
  roomAt(admission: Admission, now = this.clock()): number {
    if (this.exceeds(admission) !== undefined) return Infinity;
    if (this.hasRoom(admission, now)) return 0;
    const usage = this.usage;
    const shared = this.shared;
    const tokens = admission.input + admission.output;
    let wait = 0;
    const tpm = this.tpmLimit.value;
    if (tpm > 0) {
      const target = tpm - tokens - (shared ? this.sharedTokens() : 0);
      const roll = this.tokenRoll;
      const pending = this.anchoring.inFlight.tokens;
      wait = Math.max(
        wait,
        this.waitFor(usage, this.tpmLimit, target, 'tokens', now, roll, pending),
      );
    }
    const rpm = this.rpmLimit.value;
    if (rpm > 0) {
      const target = rpm - 1 - (shared ? this.sharedRequests() : 0);
      const roll = this.requestRoll;
      const pending = this.anchoring.inFlight.requests;
      wait = Math.max(
        wait,
        this.waitFor(usage, this.rpmLimit, target, 'requests', now, roll, pending),
      );
      if (usage.bucketMs !== 0) {
        const c = Math.max(0, this.burstAnchor.correction(now, this.span / 6));
        const others = shared ? this.sharedRecent(now) : 0;
        const w = usage.timeUntil(Infinity, Infinity, this.burstLimit - 1 - c - others, now);
        // A correction of the newest sixth fades out within a sixth of the window.
        wait = Math.max(wait, Math.min(w, c > 0 ? this.span / 6 : w));
      }
    }
    const itpm = this.itpmLimit.value;
    if (itpm > 0) {
      const target = itpm - admission.input;
      wait = Math.max(wait, this.waitFor(this.inputUsage, this.itpmLimit, target, 'tokens', now));
    }
    const otpm = this.otpmLimit.value;
    if (otpm > 0) {
      const target = otpm - admission.output;
      wait = Math.max(wait, this.waitFor(this.outputUsage, this.otpmLimit, target, 'tokens', now));
    }
    if (!Number.isFinite(wait)) wait = this.span;
    return Math.ceil(wait);
  }

  /** ms until `window` + correction is at most `target`: the sooner of the two ways there. */
  private waitFor(
    window: UsageWindow,
    limit: QuotaLimit,
    target: number,
    what: 'tokens' | 'requests',
    now: number,
    roll = 0,
    pending = 0,
  ): number {
    const c = limit.correction(now, this.span);
    const slideTarget = target - Math.max(0, c);
    let bySliding =
      what === 'tokens'
        ? window.timeUntil(slideTarget, Infinity, Infinity, now)
        : window.timeUntil(Infinity, slideTarget, Infinity, now);
    // When the upstream's window ends it forgets all it counted: only calls in flight stay.
    if (roll > now && pending <= target && roll - now < bySliding) bySliding = roll - now;
    // A correction held until the window ends does not fade.
    if (c <= 0 || limit.holds) return bySliding;
    // The correction fades linearly to 0: c(t) = c * (1 - dt / rest).
    const need = target - (what === 'tokens' ? window.tokensAt(now) : window.requestsAt(now));
    if (need < 0) return bySliding;
    const byFading = need >= c ? 0 : limit.fadeLeft(now, this.span) * (1 - need / c);
    return Math.min(bySliding, byFading);
  }

  /**
   * The first limit a call with this admission charge can never fit (its charge is above the
   * limit itself), or `undefined` when it fits an empty window.
   */
  exceeds(admission: Admission): { limit: LimitName; value: number; charge: number } | undefined {
    const tokens = admission.input + admission.output;
    if (this.tpmLimit.value > 0 && tokens > this.tpmLimit.value) {
      return { limit: 'tpm', value: this.tpmLimit.value, charge: tokens };
    }
    if (this.itpmLimit.value > 0 && admission.input > this.itpmLimit.value) {
      return { limit: 'itpm', value: this.itpmLimit.value, charge: admission.input };
    }
    if (this.otpmLimit.value > 0 && admission.output > this.otpmLimit.value) {
      return { limit: 'otpm', value: this.otpmLimit.value, charge: admission.output };
    }
    return undefined;
  }

  /**
   * Charge a call's admission (one request, its input and reserved output) before it is sent.
   * Returns when (epoch ms): the headers of its answer speak of that moment, so pass it to
   * {@link observe}.
   */
  admit(admission: Admission): number {
    const now = this.clock();
    const tokens = admission.input + admission.output;
    this.usage.add(tokens, 1, now);
    this.inputUsage.add(admission.input, 0, now);
    this.outputUsage.add(admission.output, 0, now);
    this.anchoring.admitted(admission, now);
    return now;
  }

  /**
   * The answer to an admitted call reports what it used: reconcile as the upstream does (see
   * {@link ChargePolicy}). Once per admission, `usage` undefined when the answer did not say (the
   * admission charge stays). Returns the tokens charged (negative: refunded).
   */
  settle(admission: Admission, usage: TokenUsage | undefined): number {
    this.anchoring.answered(admission);
    if (usage === undefined) return 0;
    let input = usage.input - admission.input;
    let output: number;
    if (this.charge === 'reserve') {
      // The output cap stays charged for the minute; only output beyond what was reserved counts.
      output = admission.output > 0 ? Math.max(0, usage.output - admission.output) : usage.output;
    } else {
      input += usage.cacheWrite ?? 0;
      output = usage.output - admission.output;
    }
    const tokens = input + output;
    if (input === 0 && output === 0) return 0;
    const now = this.clock();
    if (input !== 0) this.inputUsage.add(input, 0, now);
    if (output !== 0) this.outputUsage.add(output, 0, now);
    if (tokens !== 0) this.usage.add(tokens, 0, now);
    return tokens;
  }

  /**
   * An admitted call failed before the upstream produced anything: its tokens go back, the
   * request stays counted. Returns the tokens refunded (as a negative charge).
   */
  release(admission: Admission): number {
    // Its own answer's headers already set our count to the upstream's, which has its charge in
    // it if it counted it: giving the tokens back would count them out twice.
    if (this.anchoring.answered(admission)) return 0;
    const tokens = admission.input + admission.output;
    if (tokens === 0) return 0;
    const now = this.clock();
    this.usage.add(-tokens, 0, now);
    this.inputUsage.add(-admission.input, 0, now);
    this.outputUsage.add(-admission.output, 0, now);
    return -tokens;
  }

  /**
   * Anchor on an answer's rate-limit headers: learn the limits they report and correct the local
   * view by the upstream's count; see {@link HeaderAnchor.observe}. `own` is the admission of the
   * call this answer is for, while it is still in flight, and `sentAt` when it was admitted.
   */
  observe(headers: HeaderSource, own?: Admission, sentAt?: number): void {
    this.anchoring.observe(headers, own, this, sentAt);
  }

  /**
   * The last answer to this instance's own calls, as other instances can anchor on it (see
   * {@link replay}); `undefined` before any answer had rate-limit headers.
   */
  lastReading(): SharedReading | undefined {
    const own = this.anchoring.lastReading;
    if (own === undefined) return undefined;
    return { ...own, tokensEnd: this.tokenRoll, requestsEnd: this.requestRoll };
  }

  /**
   * Anchor on another instance's answer from this deployment, as on one of ours, when it is newer
   * than every answer anchored on and the shared view says when the others' usage was sent (the
   * upstream's count at that moment then holds what was sent before it, and the shared view adds
   * what was sent after). The parts of a reading whose window has ended since are left out.
   * Returns true when it was anchored on.
   */
  replay(reading: SharedReading): boolean {
    if (this.shared?.sent === undefined || !this.anchoring.isNewer(reading.sentAt)) return false;
    const now = this.clock();
    this.catchUp(now);
    const r = reading.reading;
    const tokensGone =
      (reading.tokensEnd !== 0 && reading.tokensEnd <= now) || reading.sentAt < this.tokensRolledAt;
    const requestsGone =
      (reading.requestsEnd !== 0 && reading.requestsEnd <= now) ||
      reading.sentAt < this.requestsRolledAt;
    if (tokensGone || requestsGone) {
      const rest = { ...r };
      if (tokensGone) delete rest.tokens;
      if (requestsGone) delete rest.requests;
      if (rest.tokens === undefined && rest.requests === undefined) return false;
      reading = { ...reading, reading: rest };
    }
    return this.anchoring.replay(reading, this, now);
  }

  /** Forget usage counted in the current window, and the corrections with it. */
  reset(): void {
    this.usage.reset();
    this.inputUsage.reset();
    this.outputUsage.reset();
    for (const limit of Object.values(this.limits)) limit.clear();
    this.burstAnchor.clear();
    this.tokenRoll = this.requestRoll = 0;
    this.tokensRolledAt = this.requestsRolledAt = 0;
    this.tokensAnchoredAt = this.requestsAnchoredAt = 0;
  }
}

/**
 * The sum of one column (`at`: 2 tokens, 3 requests) of `spans` sent from `from` on, cached in
 * `cache` until either changes. A span that `from` falls inside counts in proportion to the part
 * of it after `from`: its usage is taken as spread over it.
 */
function othersSince(
  cache: OthersSince,
  spans: readonly number[],
  from: number,
  at: 2 | 3,
): number {
  if (cache.spans === spans && cache.from === from) return cache.sum;
  let sum = 0;
  for (let i = 0; i + 3 < spans.length; i += 4) {
    const start = spans[i]!;
    const end = spans[i + 1]!;
    if (end <= from) continue;
    const v = spans[i + at]!;
    sum += start >= from || end <= start ? v : (v * (end - from)) / (end - start);
  }
  cache.spans = spans;
  cache.from = from;
  cache.sum = sum;
  return sum;
}

import type { Admission } from './admission';
import type { LimitName, QuotaLimit } from './quota-limit';
import {
  readRateLimits,
  readReset,
  type HeaderSource,
  type RateLimitFamily,
  type RateLimitReading,
  type ReportedLimit,
} from './rate-limit-headers';
import type { UsageWindow } from './usage-window';

/** What the upstream last reported for one limit, for operators. */
export interface ReportedRemaining {
  /** What the header said was left. */
  remaining: number;
  /** Epoch ms of the answer. */
  at: number;
}

/**
 * An answer's rate-limit reading as one instance shares it with the others (through a shared
 * state store), so that an instance that has not heard from a deployment lately anchors on the
 * upstream's count another instance heard.
 *
 * @example
 * ```ts
 * const r: SharedReading = { sentAt: t0, at: t0 + 800, tokens: 1_250, tokensEnd: t0 + 41_000,
 *   requestsEnd: 0, reading: { tokens: { limit: 10_000, remaining: 3_100 } } };
 * ```
 */
export interface SharedReading {
  /** When the call it answers was sent (epoch ms): the upstream's count is of that moment. */
  sentAt: number;
  /** When the answer came back (epoch ms). */
  at: number;
  /** What that call was charged (0 when nothing: it was refused); its request counts too. */
  tokens: number;
  /** When the upstream's token / request window ends (epoch ms), as known then; 0 = not known. */
  tokensEnd: number;
  requestsEnd: number;
  reading: RateLimitReading;
}

/** The last reading of an answer to this instance's own calls (see {@link SharedReading}). */
export interface OwnReading {
  sentAt: number;
  at: number;
  tokens: number;
  reading: RateLimitReading;
}

/** How one reading is anchored on: an answer of our own, or another instance's ({@link SharedReading}). */
interface Anchoring {
  target: AnchorTarget;
  now: number;
  /** When the call answered was sent. */
  sentAt: number;
  /** Our own answer's headers (for its reset headers), or another instance's reading. */
  headers: HeaderSource | undefined;
  shared: SharedReading | undefined;
}

/**
 * Told when an answer's headers teach a limit, or correct a configured one: the new `value`, the
 * one it replaces (`was`, 0 when none was known) and whether that one was configured.
 *
 * @example
 * ```ts
 * const onLimit: LimitListener = (limit, value) => logger.log(`${limit} ${value} learned`);
 * ```
 */
export type LimitListener = (
  limit: LimitName,
  value: number,
  was: number,
  configured: boolean,
) => void;

/**
 * The counts a {@link HeaderAnchor} corrects: a quota ledger's limits and usage.
 *
 * @example
 * ```ts
 * anchor.observe(response.headers, admission, ledger); // a QuotaLedger is an AnchorTarget
 * ```
 */
export interface AnchorTarget {
  readonly limits: Readonly<Record<LimitName, QuotaLimit>>;
  /** Correction of the requests of the newest sixth of the window (Azure's rpm / 6 per 10 s). */
  readonly burstAnchor: QuotaLimit;
  /** Requests the upstream allows in a sixth of the window: `rpm / 6`, at least 1. */
  readonly burstLimit: number;
  /** This instance's tokens and requests. */
  readonly usage: UsageWindow;
  readonly inputUsage: UsageWindow;
  readonly outputUsage: UsageWindow;
  /** Usage other instances reported, when a shared state store fills it in. */
  readonly shared: { tokens: number; requests: number } | undefined;
  /**
   * An answer to a call sent at `sentAt` is anchored on: the count (at `now`) its headers are
   * compared against, ours and, unless the shared view says when it was sent, the others'. For
   * another instance's answer (`shared`), ours sent before `sentAt`, and the part of that
   * instance's call the shared view counts as sent after it (the upstream's count holds it whole).
   */
  anchorAt(
    what: 'tokens' | 'requests',
    sentAt: number,
    now: number,
    shared?: SharedReading,
  ): number;
  /** Length of the window (ms) the upstream counts over, as the owner believes. */
  readonly windowMs: number;
  /** Forget what the upstream's windows forgot up to `now` (see {@link windowEnds}). */
  catchUp(now: number): void;
  /** When the upstream's current window for tokens / requests is known to end (epoch ms), or 0. */
  windowEnd(what: 'tokens' | 'requests'): number;
  /**
   * The upstream's window for tokens / requests ends: act at `at` (when answers written after
   * the end can have come back), forgetting what was sent before `sentBefore`.
   */
  windowEnds(what: 'tokens' | 'requests', at: number, sentBefore: number): void;
}

/** How often (answers) the `*-limit` headers are read again once every limit is known. */
const LIMIT_RECHECK = 64;

/**
 * Anchoring on the upstream's own count: reads the rate-limit headers of each answer, learns the
 * limits they report, and corrects the local view ({@link QuotaLimit.anchor}) so that it agrees
 * with what the upstream counted when it wrote the answer. Calls admitted and not yet answered
 * may not be in that count yet, so it keeps them apart ({@link admitted} / {@link answered}).
 *
 * @example
 * ```ts
 * const anchor = new HeaderAnchor(Date.now, 'openai');
 * anchor.admitted(call);
 * anchor.observe(response.headers, call, ledger);
 * anchor.answered(call);
 * ```
 */
export class HeaderAnchor {
  /** Admitted and not yet answered: what the upstream may not have counted in its last header. */
  private pendingTokens = 0;
  private pendingRequests = 0;
  private pendingInput = 0;
  private pendingOutput = 0;
  /** Answers until the `*-limit` headers are read again. */
  private limitCheck = 0;
  /** The upstream's last reported remaining, per limit. */
  private readonly reported: Partial<Record<LimitName, ReportedRemaining>> = {};
  /** The call whose answer's headers were anchored on last, until it is answered. */
  private anchoredOwn: Admission | undefined;
  /** The latest send time of a call whose answer was anchored on (ours or another's). */
  private anchoredSentAt = 0;
  /** The last reading of an answer to our own calls, for other instances. */
  private own: OwnReading | undefined;

  constructor(
    private readonly clock: () => number = Date.now,
    /** Whose rate-limit headers the answers carry; both are looked for when not known. */
    private readonly family?: RateLimitFamily,
    private readonly onLimit?: LimitListener,
  ) {}

  /** The upstream's last reported remaining per limit (only limits its headers reported). */
  get upstreamRemaining(): Readonly<Partial<Record<LimitName, ReportedRemaining>>> {
    return this.reported;
  }

  /** The last reading of an answer to this instance's own calls, if any. */
  get lastReading(): OwnReading | undefined {
    return this.own;
  }

  /** True when a call sent at `sentAt` is newer than every one whose answer was anchored on. */
  isNewer(sentAt: number): boolean {
    return sentAt > this.anchoredSentAt;
  }

  /**
   * When a call without an output cap was last admitted (epoch ms): the upstream reserves output
   * for it that we do not charge, so its count then runs ahead of ours by usage that is ours, and
   * that difference says nothing of others' pace.
   */
  private uncappedAt = -Infinity;

  /** A call was admitted (sent) at `at`: it is in flight until {@link answered}. */
  admitted(admission: Admission, at: number): void {
    if (admission.output === 0) this.uncappedAt = at;
    this.pendingTokens += admission.input + admission.output;
    this.pendingRequests += 1;
    this.pendingInput += admission.input;
    this.pendingOutput += admission.output;
  }

  /** Calls admitted and not yet answered. */
  get inFlight(): Readonly<{ tokens: number; requests: number }> {
    return { tokens: this.pendingTokens, requests: this.pendingRequests };
  }

  /**
   * An admitted call was answered (or failed): no longer in flight. True when its own answer's
   * headers were anchored on: our count then already agrees with the upstream's about it.
   */
  answered(admission: Admission): boolean {
    const anchored = this.anchoredOwn === admission;
    if (anchored) this.anchoredOwn = undefined;
    const tokens = admission.input + admission.output;
    this.pendingTokens = Math.max(0, this.pendingTokens - tokens);
    this.pendingRequests = Math.max(0, this.pendingRequests - 1);
    this.pendingInput = Math.max(0, this.pendingInput - admission.input);
    this.pendingOutput = Math.max(0, this.pendingOutput - admission.output);
    return anchored;
  }

  /**
   * Anchor `target` on an answer's rate-limit headers (`x-ratelimit-*`, `anthropic-ratelimit-*`).
   * Calls in flight other than `own` (the call this answer is for, when still in flight) are left
   * out of the comparison; `sentAt` is when `own` was admitted (what {@link QuotaLedger.admit}
   * returned). Costs one or two header lookups when there are none, and one clock read when there
   * are.
   */
  observe(
    headers: HeaderSource,
    own: Admission | undefined,
    target: AnchorTarget,
    sentAt?: number,
  ): void {
    const readLimits = this.limitCheck <= 0;
    const reading = readRateLimits(headers, readLimits, this.family);
    if (reading === undefined) return;
    if (readLimits) this.limitCheck = LIMIT_RECHECK;
    else this.limitCheck--;
    const now = this.clock();
    target.catchUp(now);
    if (own !== undefined) this.anchoredOwn = own;
    // The upstream wrote the header when the call reached it: on our clock, about when we sent it.
    const sent = sentAt !== undefined && sentAt <= now ? sentAt : now;
    const tokens = own !== undefined ? own.input + own.output : 0;
    this.own = { sentAt: sent, at: now, tokens, reading };
    if (sent > this.anchoredSentAt) this.anchoredSentAt = sent;
    const pending = {
      tokens: this.pendingTokens - tokens,
      requests: this.pendingRequests - (own !== undefined ? 1 : 0),
      input: this.pendingInput - (own?.input ?? 0),
      output: this.pendingOutput - (own?.output ?? 0),
    };
    this.apply(reading, pending, { target, now, sentAt: sent, headers, shared: undefined });
  }

  /**
   * Anchor `target` on another instance's answer ({@link SharedReading}), as on one of ours: the
   * upstream's count when that call was sent, against ours sent before it. Only a reading newer
   * than every answer anchored on counts (see {@link isNewer}); the requests of Azure's 10 s
   * window are left to our own answers (that window has mostly gone by when a sync brings it).
   * `target` has caught up to `now` (see {@link AnchorTarget.catchUp}), as its owner had to
   * before it could tell which parts of the reading still hold. Returns true when it was
   * anchored on.
   */
  replay(shared: SharedReading, target: AnchorTarget, now: number): boolean {
    // A send time ahead of our clock (the other machine's runs ahead) waits until ours gets there.
    if (!this.isNewer(shared.sentAt) || shared.sentAt > now) return false;
    this.anchoredSentAt = shared.sentAt;
    const none = { tokens: 0, requests: 0, input: 0, output: 0 };
    const context = { target, now, sentAt: shared.sentAt, headers: undefined, shared };
    this.apply(shared.reading, none, context);
    return true;
  }

  /** Anchor each limit a reading reports; `inFlight`: the calls the upstream may not have seen. */
  private apply(
    reading: RateLimitReading,
    inFlight: { tokens: number; requests: number; input: number; output: number },
    context: Anchoring,
  ): void {
    const target = context.target;
    const limits = target.limits;
    if (reading.tokens) {
      this.anchor(limits.tpm, reading.tokens, inFlight.tokens, target.usage, 'tokens', context);
    }
    if (reading.requests) this.anchorRequests(reading.requests, inFlight.requests, context);
    if (reading.input) {
      this.anchor(limits.itpm, reading.input, inFlight.input, target.inputUsage, 'input', context);
    }
    if (reading.output) {
      const window = target.outputUsage;
      this.anchor(limits.otpm, reading.output, inFlight.output, window, 'output', context);
    }
  }

  /**
   * Correct one limit by the upstream's count: ours is this instance's usage in `window` (`mine`),
   * plus the shared view's as far as the upstream's count holds it too (see
   * {@link AnchorTarget.anchorAt}), `inFlight` the part the upstream may not have seen yet. Where
   * we count more, the excess leaves our window, oldest first: the upstream's window rolled since
   * we charged it, and a correction fading at another pace than our usage slides out would soon
   * count too little. Where it counts more (someone else's usage), a correction holds the
   * difference. For tokens and requests of Azure's fixed windows, its `x-ratelimit-reset-*`
   * header says when its window ends: then it forgets all it counted, and so do we; others' usage
   * so far is taken as their pace. Another instance's reading is of the moment its call was sent:
   * ours is then what we sent before it, and nothing of ours was in flight.
   */
  private anchor(
    limit: QuotaLimit,
    reported: ReportedLimit,
    inFlight: number,
    window: UsageWindow,
    what: 'tokens' | 'requests' | 'input' | 'output',
    context: Anchoring,
  ): void {
    if (reported.limit !== undefined) this.learn(limit, reported.limit);
    if (reported.remaining === undefined || limit.value === 0) return;
    const { target, now, sentAt, shared } = context;
    const at = shared?.at ?? now;
    const last = this.reported[limit.name];
    if (last === undefined || last.at <= at) {
      this.reported[limit.name] = { remaining: reported.remaining, at };
    }
    const counts = what === 'requests' ? 'requests' : 'tokens';
    const fixed = what === 'tokens' || what === 'requests';
    const local = fixed
      ? target.anchorAt(counts, sentAt, now, shared)
      : this.ownCount(window, counts, context);
    // The upstream's count when it wrote the header, against ours of the same calls.
    const delta = limit.value - reported.remaining - (local - Math.max(0, inFlight));
    const sliding = window.bucketMs !== 0;
    let until = 0;
    let pace = 0;
    // The end is read once per window (it does not move), and again when others' usage shows,
    // to tell their pace: each header lookup costs about a µs.
    if (
      fixed &&
      sliding &&
      this.family !== 'anthropic' &&
      (delta > 0 || target.windowEnd(counts) === 0)
    ) {
      const end = this.windowEndOf(counts, context);
      if (end !== undefined) {
        until = end.until;
        target.windowEnds(counts, until, end.sentBefore);
        // With a shared view, the others that matter are in it: a difference is its lag. After a
        // call of ours without a cap, it may be what the upstream reserved for that call.
        if (delta > 0 && target.shared === undefined && now - this.uncappedAt > target.windowMs) {
          // Others' pace so far, read over at least a quarter of the window.
          const span = target.windowMs;
          const elapsed = Math.max(span / 4, span - (until - now));
          pace = Math.min(limit.value, (delta * span) / elapsed) / span;
        }
      }
    }
    if (delta < 0 && sliding) {
      // Only this instance's share of the excess is its own to forget.
      const mine = fixed ? this.ownCount(window, counts, context) : local;
      const excess = local > 0 ? (-delta * mine) / local : 0;
      if (counts === 'tokens') window.trimOldest(excess, 0, now);
      else window.trimOldest(0, excess, now);
      limit.anchor(0, now);
      return;
    }
    limit.anchor(delta, now, until, pace);
  }

  /**
   * This instance's usage in `window` that a reading is set against: all of it for our own
   * answer, what we sent before that call for another instance's.
   */
  private ownCount(window: UsageWindow, counts: 'tokens' | 'requests', context: Anchoring): number {
    const now = context.now;
    if (context.shared !== undefined) return window.usageBefore(context.sentAt, now)[counts];
    return counts === 'tokens' ? window.tokensAt(now) : window.requestsAt(now);
  }

  /**
   * When the upstream's window for tokens / requests ends (`until`), and what it forgets then
   * (what was sent before `sentBefore`), by an answer's reset header or another instance's
   * reading; `undefined` when not known.
   */
  private windowEndOf(
    what: 'tokens' | 'requests',
    context: Anchoring,
  ): { until: number; sentBefore: number } | undefined {
    const { now, sentAt, shared } = context;
    if (shared !== undefined) {
      const until = what === 'tokens' ? shared.tokensEnd : shared.requestsEnd;
      // The call was on its way for `at - sentAt`: the upstream's end, on our clock, as sent.
      return until > now ? { until, sentBefore: until - (shared.at - sentAt) } : undefined;
    }
    const ms = readReset(context.headers!, what);
    return ms !== undefined && ms > 0 ? { until: now + ms, sentBefore: sentAt + ms } : undefined;
  }

  /**
   * Azure reports the requests left of its rpm / 6 per 10 s window (its limit header then says
   * rpm / 6); Anthropic those left of the minute.
   */
  private anchorRequests(reported: ReportedLimit, pending: number, context: Anchoring): void {
    const { target, now } = context;
    const inFlight = Math.max(0, pending);
    const rpm = target.limits.rpm;
    const burstLimit = target.burstLimit;
    const isBurst =
      target.usage.bucketMs !== 0 &&
      rpm.value > 0 &&
      (reported.limit !== undefined
        ? reported.limit === burstLimit && reported.limit !== rpm.value
        : (reported.remaining ?? 0) <= burstLimit);
    if (isBurst) {
      if (reported.remaining === undefined || context.shared !== undefined) return;
      this.reported.rpm = { remaining: reported.remaining, at: now };
      const recent = target.usage.recentRequestsAt(now);
      target.burstAnchor.anchor(burstLimit - reported.remaining - (recent - inFlight), now);
      return;
    }
    this.anchor(rpm, reported, inFlight, target.usage, 'requests', context);
  }

  private learn(limit: QuotaLimit, reported: number): void {
    const configured = limit.configured !== undefined && limit.configured > 0;
    const was = limit.learn(reported);
    if (was !== undefined) this.onLimit?.(limit.name, reported, was, configured);
  }
}

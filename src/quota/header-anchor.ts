import type { Admission } from './admission';
import type { LimitName, QuotaLimit } from './quota-limit';
import {
  readRateLimits,
  type HeaderSource,
  type RateLimitFamily,
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
  /** Tokens in the window at `now`, this instance's and the shared view's. */
  tokensAt(now: number): number;
  /** Requests in the window at `now`, this instance's and the shared view's. */
  requestsAt(now: number): number;
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

  /** A call was admitted: it is in flight until {@link answered}. */
  admitted(admission: Admission): void {
    this.pendingTokens += admission.input + admission.output;
    this.pendingRequests += 1;
    this.pendingInput += admission.input;
    this.pendingOutput += admission.output;
  }

  /** An admitted call was answered (or failed): no longer in flight. */
  answered(admission: Admission): void {
    const tokens = admission.input + admission.output;
    this.pendingTokens = Math.max(0, this.pendingTokens - tokens);
    this.pendingRequests = Math.max(0, this.pendingRequests - 1);
    this.pendingInput = Math.max(0, this.pendingInput - admission.input);
    this.pendingOutput = Math.max(0, this.pendingOutput - admission.output);
  }

  /**
   * Anchor `target` on an answer's rate-limit headers (`x-ratelimit-*`, `anthropic-ratelimit-*`).
   * Calls in flight other than `own` (the call this answer is for, when still in flight) are left
   * out of the comparison. Costs one or two header lookups when there are none, and one clock
   * read when there are.
   */
  observe(headers: HeaderSource, own: Admission | undefined, target: AnchorTarget): void {
    const readLimits = this.limitCheck <= 0;
    const reading = readRateLimits(headers, readLimits, this.family);
    if (reading === undefined) return;
    if (readLimits) this.limitCheck = LIMIT_RECHECK;
    else this.limitCheck--;
    const now = this.clock();
    const limits = target.limits;
    if (reading.tokens) {
      const inFlight = this.pendingTokens - (own ? own.input + own.output : 0);
      this.anchor(limits.tpm, reading.tokens, target.tokensAt(now), inFlight, now);
    }
    if (reading.requests) this.anchorRequests(target, reading.requests, own !== undefined, now);
    if (reading.input) {
      const inFlight = this.pendingInput - (own?.input ?? 0);
      this.anchor(limits.itpm, reading.input, target.inputUsage.tokensAt(now), inFlight, now);
    }
    if (reading.output) {
      const inFlight = this.pendingOutput - (own?.output ?? 0);
      this.anchor(limits.otpm, reading.output, target.outputUsage.tokensAt(now), inFlight, now);
    }
  }

  private anchor(
    limit: QuotaLimit,
    reported: ReportedLimit,
    local: number,
    inFlight: number,
    now: number,
  ): void {
    if (reported.limit !== undefined) this.learn(limit, reported.limit);
    if (reported.remaining === undefined || limit.value === 0) return;
    this.reported[limit.name] = { remaining: reported.remaining, at: now };
    // The upstream's count when it wrote the header, against ours of the same calls.
    limit.anchor(limit.value - reported.remaining - (local - Math.max(0, inFlight)), now);
  }

  /**
   * Azure reports the requests left of its rpm / 6 per 10 s window (its limit header then says
   * rpm / 6); Anthropic those left of the minute.
   */
  private anchorRequests(
    target: AnchorTarget,
    reported: ReportedLimit,
    ownPending: boolean,
    now: number,
  ): void {
    const inFlight = Math.max(0, this.pendingRequests - (ownPending ? 1 : 0));
    const rpm = target.limits.rpm;
    const burstLimit = target.burstLimit;
    const isBurst =
      target.usage.bucketMs !== 0 &&
      rpm.value > 0 &&
      (reported.limit !== undefined
        ? reported.limit === burstLimit && reported.limit !== rpm.value
        : (reported.remaining ?? 0) <= burstLimit);
    if (isBurst) {
      if (reported.remaining === undefined) return;
      this.reported.rpm = { remaining: reported.remaining, at: now };
      const recent = target.usage.recentRequestsAt(now);
      target.burstAnchor.anchor(burstLimit - reported.remaining - (recent - inFlight), now);
      return;
    }
    this.anchor(rpm, reported, target.requestsAt(now), inFlight, now);
  }

  private learn(limit: QuotaLimit, reported: number): void {
    const configured = limit.configured !== undefined && limit.configured > 0;
    const was = limit.learn(reported);
    if (was !== undefined) this.onLimit?.(limit.name, reported, was, configured);
  }
}

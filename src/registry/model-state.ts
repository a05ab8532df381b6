import type { ModelConfig } from '../types';
import type { Admission, ChargePolicy, TokenUsage } from '../quota/admission';
import { QuotaLimit, type LimitName } from '../quota/quota-limit';
import {
  readRateLimits,
  type HeaderSource,
  type RateLimitFamily,
  type ReportedLimit,
} from '../quota/rate-limit-headers';
import { UsageWindow } from '../quota/usage-window';

/** Default cooldown (ms) after a 429 or a dropped connection. */
export const DEFAULT_COOLDOWN = 10_000;

/** What a {@link ModelState} tells its listeners. */
export type ModelEvent =
  | { type: 'down'; until: number; reason?: string }
  | { type: 'up' }
  | { type: 'spend'; tokens: number; requests: number }
  | { type: 'limit'; limit: LimitName; value: number; was: number; configured: boolean };

/** Usage other switchboard instances reported (shared state stores fill it in). */
export interface SharedUsage {
  tokens: number;
  requests: number;
  /** Requests in the newest sixth of the window, weighed against `rpm / 6` as the own ones are. */
  recentRequests?: number;
}

/** What the upstream last reported for one limit, for operators. */
export interface ReportedRemaining {
  /** What the header said was left. */
  remaining: number;
  /** Epoch ms of the answer. */
  at: number;
}

/** Options of a {@link ModelState} beyond its configuration. */
export interface ModelStateOptions {
  /** How the upstream reconciles its admission charge; default `reserve` (Azure OpenAI). */
  charge?: ChargePolicy;
  /** Whose rate-limit headers its answers carry; default both are looked for. */
  headers?: RateLimitFamily;
}

/** How often (answers) the `*-limit` headers are read again once every limit is known. */
const LIMIT_RECHECK = 64;
/** Span of the anchoring correction when usage is counted in a fixed window. */
const DEFAULT_SPAN = 60_000;

/**
 * Usage, quota and cooldown of one model on one deployment.
 *
 * `util` is the true utilization: `max(tpmUsage / tpm, rpmUsage / rpm)` (and the input and output
 * shares where `itpm` / `otpm` apply), or 1 while cooling. A model is healthy while its utilization
 * is below 1; it has room for a call ({@link hasRoom}) while the call's admission charge fits every
 * limit. Usage is counted in a {@link UsageWindow}: a fixed one that `resetUsage()` clears, or a
 * sliding one ({@link ModelState.slideUsage}), and corrected by the upstream's rate-limit headers
 * ({@link observe}).
 *
 * @example
 * ```ts
 * const state = sb.deployments.get('east')!.models.get('gpt-4o-mini')!;
 * state.markDown(30_000); // avoid it for 30 s
 * state.isHealthy(); // false
 * state.markUp();
 * state.hasRoom({ input: 1200, output: 256 }); // room for this call now?
 * ```
 */
export class ModelState {
  readonly name: string;
  /** Default cooldown in ms. */
  readonly cooldown: number;
  /** Routing tier: 0 is the most preferred; the next tier only takes what this one cannot. */
  readonly priority: number;
  /** Share of traffic within the tier (default 1). */
  readonly weight: number;
  /** Name of the deployment this state belongs to. */
  readonly deployment: string;
  /** `{ model, deployment }`, built once for metric attributes. */
  readonly attributes: Readonly<{ model: string; deployment: string }>;
  /** The limits in force, configured or learned. */
  readonly limits: Readonly<Record<LimitName, QuotaLimit>>;
  /** How the upstream reconciles its admission charge. */
  readonly charge: ChargePolicy;
  private readonly headerFamily: RateLimitFamily | undefined;

  private until = 0;
  /** The current cooldown was set by hand ({@link markDown} without a reason). */
  private manual = false;
  /** The current cooldown follows a 429: the upstream has no room, rather than being down. */
  private quotaCooldown = false;
  private failures = 0;
  /** This instance's usage of tokens and requests. */
  private readonly usage: UsageWindow;
  /** Input and output tokens apart, where `itpm` / `otpm` apply (Claude on Foundry). */
  private readonly inputUsage: UsageWindow;
  private readonly outputUsage: UsageWindow;
  private readonly tpmLimit: QuotaLimit;
  private readonly rpmLimit: QuotaLimit;
  private readonly itpmLimit: QuotaLimit;
  private readonly otpmLimit: QuotaLimit;
  /** Anchoring of the requests of the newest sixth of the window (Azure's rpm / 6 per 10 s). */
  private readonly burstAnchor = new QuotaLimit('rpm', undefined);
  /** What the upstream allows in a sixth of the window: Azure's rpm / 6 per 10 s. */
  private burstLimit = 1;
  /** Length of the window the corrections fade over. */
  private span = DEFAULT_SPAN;
  /** Admitted and not yet settled: what the upstream may not have counted in its last header. */
  private pendingTokens = 0;
  private pendingRequests = 0;
  private pendingInput = 0;
  private pendingOutput = 0;
  /** Answers until the `*-limit` headers are read again. */
  private limitCheck = 0;
  /** The upstream's last reported remaining, per limit. */
  private readonly reported: Partial<Record<LimitName, ReportedRemaining>> = {};
  /** @internal Usage seen by other instances since the last sync; written by a shared state store. */
  shared: SharedUsage | undefined;
  /** @internal Set by the registry. */
  listener: ((state: ModelState, event: ModelEvent) => void) | undefined;

  constructor(
    config: ModelConfig,
    deployment: string,
    private readonly clock: () => number = Date.now,
    options: ModelStateOptions = {},
  ) {
    this.name = config.name;
    this.cooldown = config.cooldown ?? DEFAULT_COOLDOWN;
    this.priority = config.priority ?? 0;
    this.weight = config.weight ?? 1;
    this.deployment = deployment;
    this.attributes = Object.freeze({ model: config.name, deployment });
    this.charge = options.charge ?? 'reserve';
    this.headerFamily = options.headers;
    this.usage = new UsageWindow(clock);
    this.inputUsage = new UsageWindow(clock);
    this.outputUsage = new UsageWindow(clock);
    this.tpmLimit = new QuotaLimit('tpm', config.tpm);
    this.rpmLimit = new QuotaLimit('rpm', config.rpm);
    this.itpmLimit = new QuotaLimit('itpm', config.itpm);
    this.otpmLimit = new QuotaLimit('otpm', config.otpm);
    this.limits = Object.freeze({
      tpm: this.tpmLimit,
      rpm: this.rpmLimit,
      itpm: this.itpmLimit,
      otpm: this.otpmLimit,
    });
    this.burstLimit = Math.max(1, Math.floor(this.rpmLimit.value / 6));
  }

  /** Tokens per minute allowed (configured or learned); 0 = unlimited. */
  get tpm(): number {
    return this.tpmLimit.value;
  }

  /** Requests per minute allowed (configured or learned); 0 = unlimited. */
  get rpm(): number {
    return this.rpmLimit.value;
  }

  /** Input tokens per minute allowed (Claude on Foundry); 0 = not limited apart. */
  get itpm(): number {
    return this.itpmLimit.value;
  }

  /** Output tokens per minute allowed (Claude on Foundry); 0 = not limited apart. */
  get otpm(): number {
    return this.otpmLimit.value;
  }

  /**
   * This instance's own usage window (without the shared view): its kind, bucket length and
   * {@link UsageWindow.ownBuckets}, for stores that share usage.
   */
  get window(): UsageWindow {
    return this.usage;
  }

  /** Tokens charged in the current window (this instance's, plus the shared view's). */
  get tpmUsage(): number {
    const tokens = this.usage.tokens;
    return this.shared ? tokens + this.shared.tokens : tokens;
  }

  /** Requests charged in the current window. */
  get rpmUsage(): number {
    const requests = this.usage.requests;
    return this.shared ? requests + this.shared.requests : requests;
  }

  /** This instance's own usage, without the shared view. */
  get localUsage(): Readonly<{ tokens: number; requests: number }> {
    return { tokens: this.usage.tokens, requests: this.usage.requests };
  }

  /** Input and output tokens charged in the current window (tracked for every model). */
  get ioUsage(): Readonly<{ input: number; output: number }> {
    return { input: this.inputUsage.tokens, output: this.outputUsage.tokens };
  }

  /**
   * Usage per limit as the switchboard believes the upstream counts it now: ours, plus the shared
   * view, plus the correction the upstream's last headers called for.
   */
  anchoredUsage(): Record<LimitName, number> {
    const now = this.clock();
    return {
      tpm: Math.max(0, this.tpmUsage + this.tpmLimit.correction(now, this.span)),
      rpm: Math.max(0, this.rpmUsage + this.rpmLimit.correction(now, this.span)),
      itpm: Math.max(0, this.inputUsage.tokens + this.itpmLimit.correction(now, this.span)),
      otpm: Math.max(0, this.outputUsage.tokens + this.otpmLimit.correction(now, this.span)),
    };
  }

  /** The upstream's last reported remaining per limit (only limits its headers reported). */
  get upstreamRemaining(): Readonly<Partial<Record<LimitName, ReportedRemaining>>> {
    return this.reported;
  }

  /**
   * `max(tpmUsage / tpm, rpmUsage / rpm, ...)` over the anchored view, 1 while cooling; unlimited
   * quotas count as 0.
   */
  get util(): number {
    if (this.until !== 0 && this.isCooling()) return 1;
    const usage = this.usage;
    const shared = this.shared;
    const tpm = this.tpmLimit.value;
    const rpm = this.rpmLimit.value;
    let t = 0;
    if (tpm > 0) {
      let used = shared ? usage.tokens + shared.tokens : usage.tokens;
      used += this.tpmLimit.correction(this.clock(), this.span);
      t = used > 0 ? used / tpm : 0;
    }
    if (rpm > 0) {
      let used = shared ? usage.requests + shared.requests : usage.requests;
      used += this.rpmLimit.correction(this.clock(), this.span);
      let r = used > 0 ? used / rpm : 0;
      if (usage.bucketMs !== 0) {
        // Azure enforces RPM as rpm/6 per 10 s: a burst fills that long before the minute does.
        const recent =
          usage.recentRequests +
          (shared?.recentRequests ?? 0) +
          this.burstAnchor.correction(this.clock(), this.span / 6);
        const burst = recent / this.burstLimit;
        if (burst > r) r = burst;
      }
      if (r > t) t = r;
    }
    if (this.itpmLimit.value > 0 || this.otpmLimit.value > 0) {
      const io = this.ioShares();
      if (io > t) t = io;
    }
    return t;
  }

  private ioShares(): number {
    const now = this.clock();
    let s = 0;
    if (this.itpmLimit.value > 0) {
      s =
        (this.inputUsage.tokens + this.itpmLimit.correction(now, this.span)) / this.itpmLimit.value;
    }
    if (this.otpmLimit.value > 0) {
      const o =
        (this.outputUsage.tokens + this.otpmLimit.correction(now, this.span)) /
        this.otpmLimit.value;
      if (o > s) s = o;
    }
    return s;
  }

  /**
   * @internal Count usage over a sliding window of `windowMs` instead of a fixed one that only
   * {@link resetUsage} clears (`0` switches back); see {@link UsageWindow}. `util` then also weighs
   * the requests of the newest sixth of the window against `rpm / 6`, as Azure enforces RPM per
   * 10 s. Usage counted so far stays.
   *
   * @example
   * ```ts
   * state.slideUsage(60_000); // the minute that ends now, in 120 buckets of 500 ms
   * ```
   */
  slideUsage(windowMs: number, buckets = 120): void {
    const kind = windowMs > 0 ? 'sliding' : 'fixed';
    this.usage.configure(kind, windowMs, buckets);
    this.inputUsage.configure(kind, windowMs, buckets);
    this.outputUsage.configure(kind, windowMs, buckets);
    this.span = windowMs > 0 ? windowMs : DEFAULT_SPAN;
    this.burstLimit = Math.max(1, Math.floor(this.rpmLimit.value / 6));
  }

  /** True while utilization is below 1 and the model is not cooling. */
  isHealthy(): boolean {
    return this.util < 1;
  }

  /**
   * True when a call with this admission charge fits every limit now, by the anchored view, and the
   * model is not cooling: the upstream would admit it.
   *
   * @example
   * ```ts
   * const roomy = pool.filter((d) => d.models.get(model)!.hasRoom({ input: 900, output: 256 }));
   * ```
   */
  hasRoom(admission: Admission): boolean {
    if (this.until !== 0 && this.isCooling()) return false;
    const usage = this.usage;
    const tpm = this.tpmLimit.value;
    const now = this.clock();
    if (tpm > 0) {
      const shared = this.shared ? this.shared.tokens : 0;
      const used = usage.tokens + shared + this.tpmLimit.correction(now, this.span);
      if (used + admission.input + admission.output > tpm) return false;
    }
    const rpm = this.rpmLimit.value;
    if (rpm > 0) {
      const shared = this.shared ? this.shared.requests : 0;
      const used = usage.requests + shared + this.rpmLimit.correction(now, this.span);
      if (used + 1 > rpm) return false;
      if (usage.bucketMs !== 0) {
        const recent =
          usage.recentRequests +
          (this.shared?.recentRequests ?? 0) +
          this.burstAnchor.correction(now, this.span / 6);
        if (recent + 1 > this.burstLimit) return false;
      }
    }
    const itpm = this.itpmLimit.value;
    if (itpm > 0) {
      const used = this.inputUsage.tokens + this.itpmLimit.correction(now, this.span);
      if (used + admission.input > itpm) return false;
    }
    const otpm = this.otpmLimit.value;
    if (otpm > 0) {
      const used = this.outputUsage.tokens + this.otpmLimit.correction(now, this.span);
      if (used + admission.output > otpm) return false;
    }
    return true;
  }

  /**
   * ms until a call with this admission charge has room, as usage slides out and cooldowns end (0
   * when it has room now); `Infinity` when it never will (it exceeds a limit, see {@link exceeds}).
   * The answer is an upper bound: corrections fade out sooner than it assumes.
   */
  roomAt(admission: Admission): number {
    if (this.exceeds(admission) !== undefined) return Infinity;
    const cooling = this.cooldownRemaining;
    if (this.hasRoomIgnoringCooldown(admission)) return cooling;
    const now = this.clock();
    let wait = 0;
    const tokens = admission.input + admission.output;
    const tpm = this.tpmLimit.value;
    const shared = this.shared;
    if (tpm > 0) {
      wait = Math.max(
        wait,
        this.waitFor(
          this.usage,
          this.tpmLimit,
          tpm - tokens - (shared ? shared.tokens : 0),
          'tokens',
          now,
        ),
      );
    }
    const rpm = this.rpmLimit.value;
    if (rpm > 0) {
      wait = Math.max(
        wait,
        this.waitFor(
          this.usage,
          this.rpmLimit,
          rpm - 1 - (shared ? shared.requests : 0),
          'requests',
          now,
        ),
      );
      if (this.usage.bucketMs !== 0) {
        const c = Math.max(0, this.burstAnchor.correction(now, this.span / 6));
        const others = shared?.recentRequests ?? 0;
        const w = this.usage.timeUntil(Infinity, Infinity, this.burstLimit - 1 - c - others);
        // A correction of the newest sixth fades out within a sixth of the window.
        wait = Math.max(wait, Math.min(w, c > 0 ? this.span / 6 : w));
      }
    }
    if (this.itpmLimit.value > 0) {
      wait = Math.max(
        wait,
        this.waitFor(
          this.inputUsage,
          this.itpmLimit,
          this.itpmLimit.value - admission.input,
          'tokens',
          now,
        ),
      );
    }
    if (this.otpmLimit.value > 0) {
      wait = Math.max(
        wait,
        this.waitFor(
          this.outputUsage,
          this.otpmLimit,
          this.otpmLimit.value - admission.output,
          'tokens',
          now,
        ),
      );
    }
    if (!Number.isFinite(wait)) wait = this.span;
    return Math.max(cooling, Math.ceil(wait));
  }

  /** ms until `window` + correction is at most `target`: the sooner of the two ways there. */
  private waitFor(
    window: UsageWindow,
    limit: QuotaLimit,
    target: number,
    what: 'tokens' | 'requests',
    now: number,
  ): number {
    const c = limit.correction(now, this.span);
    const slideTarget = target - Math.max(0, c);
    const bySliding =
      what === 'tokens'
        ? window.timeUntil(slideTarget, Infinity)
        : window.timeUntil(Infinity, slideTarget);
    if (c <= 0) return bySliding;
    // The correction fades linearly to 0: c(t) = c * (1 - dt / rest).
    const need = target - (what === 'tokens' ? window.tokens : window.requests);
    if (need < 0) return bySliding;
    const byFading = need >= c ? 0 : limit.fadeLeft(now, this.span) * (1 - need / c);
    return Math.min(bySliding, byFading);
  }

  private hasRoomIgnoringCooldown(admission: Admission): boolean {
    const until = this.until;
    this.until = 0;
    try {
      return this.hasRoom(admission);
    } finally {
      this.until = until;
    }
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
   * @internal Charge a call's admission (one request, its input and reserved output) before it
   * is sent, so concurrent calls see it.
   */
  admit(admission: Admission): void {
    const tokens = admission.input + admission.output;
    this.usage.add(tokens, 1);
    this.inputUsage.add(admission.input);
    this.outputUsage.add(admission.output);
    this.pendingTokens += tokens;
    this.pendingRequests += 1;
    this.pendingInput += admission.input;
    this.pendingOutput += admission.output;
    if (this.listener) this.listener(this, { type: 'spend', tokens, requests: 1 });
  }

  /**
   * @internal The answer to an admitted call reports what it used: reconcile as the upstream
   * does (see {@link ChargePolicy}). Call once per admission, with `usage` undefined when the
   * answer did not say (the admission charge stays).
   */
  settle(admission: Admission, usage: TokenUsage | undefined): void {
    this.unpend(admission);
    if (usage === undefined) return;
    let input = usage.input - admission.input;
    let output: number;
    if (this.charge === 'reserve') {
      // The output cap stays charged for the minute; only output beyond what was reserved counts.
      output = admission.output > 0 ? Math.max(0, usage.output - admission.output) : usage.output;
    } else {
      input += usage.cacheWrite ?? 0;
      output = usage.output - admission.output;
    }
    if (input !== 0) this.inputUsage.add(input);
    if (output !== 0) this.outputUsage.add(output);
    const tokens = input + output;
    if (tokens !== 0) {
      this.usage.add(tokens);
      if (this.listener) this.listener(this, { type: 'spend', tokens, requests: 0 });
    }
  }

  /**
   * @internal An admitted call failed before the upstream produced anything: its tokens go back,
   * the request stays counted.
   */
  release(admission: Admission): void {
    this.unpend(admission);
    const tokens = admission.input + admission.output;
    if (tokens === 0) return;
    this.usage.add(-tokens);
    this.inputUsage.add(-admission.input);
    this.outputUsage.add(-admission.output);
    if (this.listener) this.listener(this, { type: 'spend', tokens: -tokens, requests: 0 });
  }

  private unpend(admission: Admission): void {
    const tokens = admission.input + admission.output;
    this.pendingTokens = Math.max(0, this.pendingTokens - tokens);
    this.pendingRequests = Math.max(0, this.pendingRequests - 1);
    this.pendingInput = Math.max(0, this.pendingInput - admission.input);
    this.pendingOutput = Math.max(0, this.pendingOutput - admission.output);
  }

  /**
   * @internal Anchor on an answer's rate-limit headers (`x-ratelimit-*`, `anthropic-ratelimit-*`):
   * learn the limits they report, and correct the local view so that it agrees with the
   * upstream's count when the answer was written. Calls admitted and not yet answered (other than
   * `own`, the call this answer is for, when still pending) may not be in that count yet, so they
   * are left out of the comparison. Costs one or two header lookups when there are none.
   */
  observe(headers: HeaderSource, own?: Admission): void {
    const readLimits = this.limitCheck <= 0;
    const reading = readRateLimits(headers, readLimits, this.headerFamily);
    if (reading === undefined) return;
    if (readLimits) this.limitCheck = LIMIT_RECHECK;
    else this.limitCheck--;
    const now = this.clock();
    const ownTokens = own ? own.input + own.output : 0;
    const shared = this.shared;
    if (reading.tokens) {
      this.anchor(
        this.tpmLimit,
        reading.tokens,
        this.usage.tokens + (shared ? shared.tokens : 0),
        Math.max(0, this.pendingTokens - ownTokens),
        now,
      );
    }
    if (reading.requests) this.anchorRequests(reading.requests, own !== undefined, now);
    if (reading.input) {
      this.anchor(
        this.itpmLimit,
        reading.input,
        this.inputUsage.tokens,
        Math.max(0, this.pendingInput - (own?.input ?? 0)),
        now,
      );
    }
    if (reading.output) {
      this.anchor(
        this.otpmLimit,
        reading.output,
        this.outputUsage.tokens,
        Math.max(0, this.pendingOutput - (own?.output ?? 0)),
        now,
      );
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
    limit.anchor(limit.value - reported.remaining - (local - inFlight), now);
  }

  /**
   * Azure reports the requests left of its rpm / 6 per 10 s window (its limit header then says
   * rpm / 6); Anthropic those left of the minute.
   */
  private anchorRequests(reported: ReportedLimit, ownPending: boolean, now: number): void {
    const inFlight = Math.max(0, this.pendingRequests - (ownPending ? 1 : 0));
    const burst = this.usage.bucketMs !== 0 && this.rpmLimit.value > 0;
    const isBurst =
      burst &&
      (reported.limit !== undefined
        ? reported.limit === this.burstLimit && reported.limit !== this.rpmLimit.value
        : (reported.remaining ?? 0) <= this.burstLimit);
    if (isBurst) {
      if (reported.remaining === undefined) return;
      this.reported.rpm = { remaining: reported.remaining, at: now };
      const delta = this.burstLimit - reported.remaining - (this.usage.recentRequests - inFlight);
      this.burstAnchor.anchor(delta, now);
      return;
    }
    const shared = this.shared ? this.shared.requests : 0;
    this.anchor(this.rpmLimit, reported, this.usage.requests + shared, inFlight, now);
    this.burstLimit = Math.max(1, Math.floor(this.rpmLimit.value / 6));
  }

  private learn(limit: QuotaLimit, reported: number): void {
    const configured = limit.configured !== undefined && limit.configured > 0;
    const was = limit.learn(reported);
    if (was === undefined) return;
    if (limit.name === 'rpm') this.burstLimit = Math.max(1, Math.floor(reported / 6));
    this.listener?.(this, { type: 'limit', limit: limit.name, value: reported, was, configured });
  }

  /** True while a mark-down lasts. */
  isCooling(): boolean {
    if (this.until === 0) return false;
    if (this.clock() < this.until) return true;
    this.until = 0;
    this.manual = false;
    return false;
  }

  /** True while a cooldown set by hand ({@link markDown} without a reason) lasts. */
  isMarkedDown(): boolean {
    return this.manual && this.isCooling();
  }

  /**
   * Why a call with this admission charge cannot go here now: `room` (it can), `quota` (no room
   * by the anchored view, or cooling after a 429: room comes back by itself), or `down` (marked
   * down by hand, or cooling after connection errors or 5xx: no promise of room).
   */
  blockedBy(admission: Admission): 'room' | 'quota' | 'down' {
    if (this.isCooling()) return this.quotaCooldown ? 'quota' : 'down';
    return this.hasRoom(admission) ? 'room' : 'quota';
  }

  /** ms left of the current cooldown (0 when not cooling). */
  get cooldownRemaining(): number {
    return this.isCooling() ? this.until - this.clock() : 0;
  }

  /** Epoch ms at which the cooldown ends, 0 when not cooling. */
  get cooldownUntil(): number {
    return this.isCooling() ? this.until : 0;
  }

  /**
   * Avoid this model for `ms` (default: its configured cooldown). A longer running cooldown is
   * kept. Without a `reason` it counts as marked down by hand: when every deployment of a model
   * is, calls still go out on a best-effort basis.
   */
  markDown(ms: number = this.cooldown, reason?: string): void {
    const until = this.clock() + Math.max(0, ms);
    if (until <= this.until) return;
    this.until = until;
    this.manual = reason === undefined;
    // The failure classification's reason for a 429.
    this.quotaCooldown = reason === 'rate_limit';
    this.listener?.(this, { type: 'down', until, reason });
  }

  /** End a cooldown now. */
  markUp(): void {
    const was = this.until;
    this.until = 0;
    this.manual = false;
    this.failures = 0;
    if (was !== 0) this.listener?.(this, { type: 'up' });
  }

  /** Forget usage counted in the current window. */
  resetUsage(): void {
    this.usage.reset();
    this.inputUsage.reset();
    this.outputUsage.reset();
    for (const limit of Object.values(this.limits)) limit.clear();
    this.burstAnchor.clear();
  }

  /**
   * @internal Charge (or, with negative tokens, refund) usage. Counters never go below 0: a refund
   * that arrives after a window reset must not eat into the new window.
   */
  spend(tokens: number, requests = 0): void {
    this.usage.add(tokens, requests);
    if (this.listener) this.listener(this, { type: 'spend', tokens, requests });
  }

  /** @internal Restore a cooldown that another instance published (no event is raised). */
  applyCooldown(until: number): void {
    this.until = until > this.clock() ? until : 0;
    // Cooldowns are shared so that a 429 seen by one instance keeps the others off.
    this.manual = false;
    this.quotaCooldown = true;
  }

  /** @internal Count a consecutive upstream failure; returns the count so far. */
  recordFailure(): number {
    return ++this.failures;
  }

  /** @internal A success ends a run of failures. */
  recordSuccess(): void {
    if (this.failures !== 0) this.failures = 0;
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      tpm: this.tpm,
      rpm: this.rpm,
      tpmUsage: this.tpmUsage,
      rpmUsage: this.rpmUsage,
      util: this.util,
      cooling: this.isCooling(),
      cooldownRemaining: this.cooldownRemaining,
    };
  }
}

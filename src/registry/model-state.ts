import type { ModelConfig } from '../types';
import type { Admission, ChargePolicy, TokenUsage } from '../quota/admission';
import type { ReportedRemaining, SharedReading } from '../quota/header-anchor';
import { QuotaLedger, type QuotaLedgerOptions, type SharedUsage } from '../quota/quota-ledger';
import type { LimitName, QuotaLimit } from '../quota/quota-limit';
import type { HeaderSource } from '../quota/rate-limit-headers';
import type { UsageWindow } from '../quota/usage-window';

export type { ReportedRemaining } from '../quota/header-anchor';
export type { SharedUsage } from '../quota/quota-ledger';

/** Default cooldown (ms) after a 429 or a dropped connection. */
export const DEFAULT_COOLDOWN = 10_000;

/** What a {@link ModelState} tells its listeners. */
export type ModelEvent =
  | { type: 'down'; until: number; reason?: string }
  | { type: 'up' }
  | { type: 'spend'; tokens: number; requests: number }
  | { type: 'limit'; limit: LimitName; value: number; was: number; configured: boolean };

/** Options of a {@link ModelState} beyond its configuration: how its upstream charges and reports. */
export type ModelStateOptions = Pick<QuotaLedgerOptions, 'charge' | 'headers'>;

/**
 * Usage, quota and cooldown of one model on one deployment.
 *
 * `util` is the true utilization: `max(tpmUsage / tpm, rpmUsage / rpm)` (and the input and output
 * shares where `itpm` / `otpm` apply), or 1 while cooling. A model is healthy while its utilization
 * is below 1; it has room for a call ({@link hasRoom}) while the call's admission charge fits every
 * limit and it is not cooling. The quota accounting (usage windows, limits, the anchoring on the
 * upstream's rate-limit headers) is its {@link QuotaLedger}, {@link quota}; the state adds its
 * identity, the cooldowns, the count of consecutive failures and the events its registry hears.
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
  /** The upstream's name for the model, sent as `model` (its `deployment`, else its name). */
  readonly upstreamName: string;
  /** Name of the deployment this state belongs to. */
  readonly deployment: string;
  /** `{ model, deployment }`, built once for metric attributes. */
  readonly attributes: Readonly<{ model: string; deployment: string }>;
  /** The quota accounting: usage, limits, anchoring on the upstream's headers. */
  readonly quota: QuotaLedger;

  private until = 0;
  /** The current cooldown was set by hand ({@link markDown} without a reason). */
  private manual = false;
  /** The current cooldown follows a 429: the upstream has no room, rather than being down. */
  private quotaCooldown = false;
  /** Why the current cooldown was set (`markDown`'s reason). */
  private why: string | undefined = undefined;
  private failures = 0;
  /** @internal Set by the registry. */
  listener: ((state: ModelState, event: ModelEvent) => void) | undefined;

  constructor(
    config: ModelConfig,
    deployment: string,
    private readonly clock: () => number = Date.now,
    options: ModelStateOptions = {},
  ) {
    this.name = config.name;
    this.upstreamName = config.deployment ?? config.name;
    this.cooldown = config.cooldown ?? DEFAULT_COOLDOWN;
    this.priority = config.priority ?? 0;
    this.weight = config.weight ?? 1;
    this.deployment = deployment;
    this.attributes = Object.freeze({ model: config.name, deployment });
    this.quota = new QuotaLedger(config, clock, {
      ...options,
      onLimit: (limit, value, was, configured) =>
        this.listener?.(this, { type: 'limit', limit, value, was, configured }),
    });
  }

  /** The limits in force, configured or learned. */
  get limits(): Readonly<Record<LimitName, QuotaLimit>> {
    return this.quota.limits;
  }

  /** How the upstream reconciles its admission charge. */
  get charge(): ChargePolicy {
    return this.quota.charge;
  }

  /** @internal Usage seen by other instances since the last sync; written by a shared state store. */
  get shared(): SharedUsage | undefined {
    return this.quota.shared;
  }

  /** @internal */
  set shared(usage: SharedUsage | undefined) {
    this.quota.shared = usage;
  }

  /** Tokens per minute allowed (configured or learned); 0 = unlimited. */
  get tpm(): number {
    return this.quota.limits.tpm.value;
  }

  /** Requests per minute allowed (configured or learned); 0 = unlimited. */
  get rpm(): number {
    return this.quota.limits.rpm.value;
  }

  /** Input tokens per minute allowed (Claude on Foundry); 0 = not limited apart. */
  get itpm(): number {
    return this.quota.limits.itpm.value;
  }

  /** Output tokens per minute allowed (Claude on Foundry); 0 = not limited apart. */
  get otpm(): number {
    return this.quota.limits.otpm.value;
  }

  /** This instance's own usage window (without the shared view), for stores that share usage. */
  get window(): UsageWindow {
    return this.quota.usage;
  }

  /** Tokens charged in the current window (this instance's, plus the shared view's). */
  get tpmUsage(): number {
    return this.quota.tokensAt(this.clock());
  }

  /** Requests charged in the current window. */
  get rpmUsage(): number {
    return this.quota.requestsAt(this.clock());
  }

  /** This instance's own usage, without the shared view. */
  get localUsage(): Readonly<{ tokens: number; requests: number }> {
    const now = this.clock();
    return { tokens: this.window.tokensAt(now), requests: this.window.requestsAt(now) };
  }

  /** Input and output tokens charged in the current window (tracked for every model). */
  get ioUsage(): Readonly<{ input: number; output: number }> {
    const now = this.clock();
    const { inputUsage, outputUsage } = this.quota;
    return { input: inputUsage.tokensAt(now), output: outputUsage.tokensAt(now) };
  }

  /** Usage per limit as the upstream is believed to count it now; see {@link QuotaLedger.anchoredUsage}. */
  anchoredUsage(): Record<LimitName, number> {
    return this.quota.anchoredUsage(this.clock());
  }

  /** Each limit's share now, whose largest is {@link util} (when not cooling); see {@link QuotaLedger.shares}. */
  shares(): Record<LimitName, number> {
    return this.quota.shares(this.clock());
  }

  /** The upstream's last reported remaining per limit (only limits its headers reported). */
  get upstreamRemaining(): Readonly<Partial<Record<LimitName, ReportedRemaining>>> {
    return this.quota.upstreamRemaining;
  }

  /**
   * `max(tpmUsage / tpm, rpmUsage / rpm, ...)` over the anchored view, 1 while cooling; unlimited
   * quotas count as 0.
   */
  get util(): number {
    const now = this.clock();
    if (this.until !== 0 && this.coolingAt(now)) return 1;
    return this.quota.util(now);
  }

  /**
   * @internal Count usage over a sliding window of `windowMs` (`0`: a fixed one that
   * {@link resetUsage} clears); see {@link QuotaLedger.slide}. Usage counted so far stays.
   */
  slideUsage(windowMs: number, buckets = 120): void {
    this.quota.slide(windowMs, buckets);
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
    const now = this.clock();
    if (this.until !== 0 && this.coolingAt(now)) return false;
    return this.quota.hasRoom(admission, now);
  }

  /**
   * True when the quota view alone (cooldowns aside) has no room for a call with this admission
   * charge. Asked when a call got a 429, after its headers (if any) were read: a 429 the view
   * explains need not cool the model (see the attempt's failure handling).
   */
  quotaFull(admission: Admission): boolean {
    return !this.quota.hasRoom(admission);
  }

  /**
   * ms until a call with this admission charge has room, as usage slides out and cooldowns end (0
   * when it has room now); `Infinity` when it never will; see {@link QuotaLedger.roomAt}.
   */
  roomAt(admission: Admission): number {
    const now = this.clock();
    const wait = this.quota.roomAt(admission, now);
    if (wait === Infinity) return Infinity;
    const cooling = this.until !== 0 && this.coolingAt(now) ? this.until - now : 0;
    return Math.max(cooling, wait);
  }

  /** The first limit a call with this admission charge can never fit; see {@link QuotaLedger.exceeds}. */
  exceeds(admission: Admission): { limit: LimitName; value: number; charge: number } | undefined {
    return this.quota.exceeds(admission);
  }

  /**
   * @internal Charge a call's admission (one request, its input and reserved output) before it
   * is sent, so concurrent calls see it. Returns when (epoch ms), for {@link observe}.
   */
  admit(admission: Admission): number {
    const at = this.quota.admit(admission);
    this.spent(admission.input + admission.output, 1);
    return at;
  }

  /**
   * @internal Reconcile an admitted call with what its answer says it used (`undefined`: the
   * answer did not say); see {@link QuotaLedger.settle}. Once per admission.
   */
  settle(admission: Admission, usage: TokenUsage | undefined): void {
    this.spent(this.quota.settle(admission, usage), 0);
  }

  /** @internal An admitted call failed before the upstream produced anything: its tokens go back. */
  release(admission: Admission): void {
    this.spent(this.quota.release(admission), 0);
  }

  /** Tell the registry what a call charged, unless nothing. */
  private spent(tokens: number, requests: number): void {
    if (this.listener !== undefined && (tokens !== 0 || requests !== 0)) {
      this.listener(this, { type: 'spend', tokens, requests });
    }
  }

  /**
   * @internal Anchor on an answer's rate-limit headers (`x-ratelimit-*`, `anthropic-ratelimit-*`):
   * learn the limits, correct the local view; see {@link QuotaLedger.observe}.
   */
  observe(headers: HeaderSource, own?: Admission, sentAt?: number): void {
    this.quota.observe(headers, own, sentAt);
  }

  /** @internal The last answer to this instance's calls, for other instances to anchor on. */
  lastReading(): SharedReading | undefined {
    return this.quota.lastReading();
  }

  /**
   * @internal Anchor on another instance's answer from this deployment (a shared state store
   * brings it); see {@link QuotaLedger.replay}.
   */
  replay(reading: SharedReading): boolean {
    return this.quota.replay(reading);
  }

  /** True while a mark-down lasts. */
  isCooling(): boolean {
    return this.until !== 0 && this.coolingAt(this.clock());
  }

  /** Whether a mark-down lasts at `now`; forgets one that has ended. */
  private coolingAt(now: number): boolean {
    if (now < this.until) return true;
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
    const now = this.clock();
    if (this.until !== 0 && this.coolingAt(now)) return this.quotaCooldown ? 'quota' : 'down';
    return this.quota.hasRoom(admission, now) ? 'room' : 'quota';
  }

  /** ms left of the current cooldown (0 when not cooling). */
  get cooldownRemaining(): number {
    const now = this.clock();
    return this.until !== 0 && this.coolingAt(now) ? this.until - now : 0;
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
    this.why = reason;
    // The failure classification's reasons for a 429: room comes back by itself.
    this.quotaCooldown = reason === 'rate_limit' || reason?.startsWith('quota exhausted') === true;
    this.listener?.(this, { type: 'down', until, reason });
  }

  /**
   * Why the model is avoided now, as its mark-down said: `unauthorized (401)`, `not deployed`,
   * `quota exhausted until <ISO time>`, `rate_limit`, `connection`, ...; undefined while it is not
   * cooling, or when it was marked down by hand or by another instance.
   */
  get downReason(): string | undefined {
    return this.isCooling() ? this.why : undefined;
  }

  /** End a cooldown now. */
  markUp(): void {
    const was = this.until;
    this.until = 0;
    this.why = undefined;
    this.manual = false;
    this.failures = 0;
    if (was !== 0) this.listener?.(this, { type: 'up' });
  }

  /** Forget usage counted in the current window. */
  resetUsage(): void {
    this.quota.reset();
  }

  /**
   * @internal Charge (or, with negative tokens, refund) usage. Counters never go below 0: a refund
   * that arrives after a window reset must not eat into the new window.
   */
  spend(tokens: number, requests = 0): void {
    this.quota.usage.add(tokens, requests);
    if (this.listener) this.listener(this, { type: 'spend', tokens, requests });
  }

  /** @internal Restore a cooldown that another instance published (no event is raised). */
  applyCooldown(until: number): void {
    this.until = until > this.clock() ? until : 0;
    this.why = undefined;
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

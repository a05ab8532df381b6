import type { ModelConfig } from '../config/switchboard-options';

/** Default cooldown (ms) after a 429 or a dropped connection. */
export const DEFAULT_COOLDOWN = 10_000;

/** What a {@link ModelState} tells its listeners. */
export type ModelEvent =
  | { type: 'down'; until: number; reason?: string }
  | { type: 'up' }
  | { type: 'spend'; tokens: number; requests: number };

/** Usage other switchboard instances reported (shared state stores fill it in). */
export interface SharedUsage {
  tokens: number;
  requests: number;
}

/**
 * Usage, quota and cooldown of one model on one deployment.
 *
 * `util` is the true utilization: `max(tpmUsage / tpm, rpmUsage / rpm)`, or 1 while cooling. A model
 * is healthy while its utilization is below 1. Usage is counted in a fixed window that
 * `resetUsage()` clears, or over a sliding window ({@link ModelState.slideUsage}).
 *
 * @example
 * ```ts
 * const state = sb.deployments.get('east')!.models.get('gpt-4o-mini')!;
 * state.markDown(30_000); // avoid it for 30 s
 * state.isHealthy(); // false
 * state.markUp();
 * ```
 */
export class ModelState {
  readonly name: string;
  /** Tokens per minute allowed; 0 = unlimited. */
  readonly tpm: number;
  /** Requests per minute allowed; 0 = unlimited. */
  readonly rpm: number;
  /** Default cooldown in ms. */
  readonly cooldown: number;
  /** Name of the deployment this state belongs to. */
  readonly deployment: string;
  /** `{ model, deployment }`, built once for metric attributes. */
  readonly attributes: Readonly<{ model: string; deployment: string }>;

  private tokens = 0;
  private requests = 0;
  private until = 0;
  private failures = 0;
  /** Sliding-window mode (see {@link slideUsage}): 0 = usage is only cleared by resetUsage(). */
  private bucketMs = 0;
  /** Usage per bucket, a ring; `head` is the bucket being filled, opened at `headStart`. */
  private bucketTokens: Float64Array | undefined;
  private bucketRequests: Float64Array | undefined;
  private head = 0;
  private headStart = 0;
  /** Requests in the newest sixth of the window (the newest `shortBuckets` buckets). */
  private shortRequests = 0;
  private shortBuckets = 0;
  /** What the upstream allows in a sixth of the window: Azure's rpm / 6 per 10 s. */
  private burstLimit = 1;
  /** @internal Usage seen by other instances since the last sync; written by a shared state store. */
  shared: SharedUsage | undefined;
  /** @internal Set by the registry. */
  listener: ((state: ModelState, event: ModelEvent) => void) | undefined;

  constructor(
    config: ModelConfig,
    deployment: string,
    private readonly clock: () => number = Date.now,
  ) {
    this.name = config.name;
    this.tpm = config.tpm ?? 0;
    this.rpm = config.rpm ?? 0;
    this.cooldown = config.cooldown ?? DEFAULT_COOLDOWN;
    this.deployment = deployment;
    this.attributes = Object.freeze({ model: config.name, deployment });
  }

  /** Tokens charged in the current window (this instance's, plus the shared view's). */
  get tpmUsage(): number {
    if (this.bucketMs !== 0) this.slide();
    return this.shared ? this.tokens + this.shared.tokens : this.tokens;
  }

  /** Requests charged in the current window. */
  get rpmUsage(): number {
    if (this.bucketMs !== 0) this.slide();
    return this.shared ? this.requests + this.shared.requests : this.requests;
  }

  /** This instance's own usage, without the shared view. */
  get localUsage(): Readonly<{ tokens: number; requests: number }> {
    if (this.bucketMs !== 0) this.slide();
    return { tokens: this.tokens, requests: this.requests };
  }

  /** `max(tpmUsage / tpm, rpmUsage / rpm)`, 1 while cooling; unlimited quotas count as 0. */
  get util(): number {
    if (this.until !== 0 && this.isCooling()) return 1;
    if (this.bucketMs !== 0) this.slide();
    const shared = this.shared;
    const t = this.tpm > 0 ? (shared ? this.tokens + shared.tokens : this.tokens) / this.tpm : 0;
    let r =
      this.rpm > 0 ? (shared ? this.requests + shared.requests : this.requests) / this.rpm : 0;
    if (this.shortBuckets !== 0 && this.rpm > 0) {
      // Azure enforces RPM as rpm/6 per 10 s: a burst fills that long before the minute does.
      const burst = this.shortRequests / this.burstLimit;
      if (burst > r) r = burst;
    }
    return t > r ? t : r;
  }

  /**
   * @internal Count usage over a sliding window of `windowMs` instead of a fixed one that only
   * {@link resetUsage} clears (`0` switches back). Usage is kept in `buckets` buckets (a multiple
   * of 6) of `windowMs / buckets` and forgotten a bucket at a time once older than the window, so
   * the current window covers at least the last `windowMs` (at most a bucket more): never less
   * than what an upstream counts in any fixed window of that length that ends now. `util` then
   * also weighs the requests of the newest sixth of the window against `rpm / 6`, as Azure
   * enforces RPM per 10 s. Usage counted so far stays.
   *
   * @example
   * ```ts
   * state.slideUsage(60_000); // the minute that ends now, in 120 buckets of 500 ms
   * ```
   */
  slideUsage(windowMs: number, buckets = 120): void {
    this.shortBuckets = 0;
    this.shortRequests = 0;
    if (!(windowMs > 0)) {
      this.bucketMs = 0;
      this.bucketTokens = this.bucketRequests = undefined;
      return;
    }
    buckets = Math.max(6, Math.round(buckets / 6) * 6);
    this.bucketMs = windowMs / buckets;
    this.bucketTokens = new Float64Array(buckets + 1);
    this.bucketRequests = new Float64Array(buckets + 1);
    this.bucketTokens[0] = this.tokens;
    this.bucketRequests[0] = this.requests;
    this.head = 0;
    this.headStart = this.clock();
    // The sixth of the window plus the bucket being filled, as the full window is.
    this.shortBuckets = buckets / 6 + 1;
    this.shortRequests = this.requests;
    this.burstLimit = Math.max(1, Math.floor(this.rpm / 6));
  }

  /** Forget the buckets that left the window. */
  private slide(): void {
    const now = this.clock();
    const elapsed = now - this.headStart;
    if (elapsed < this.bucketMs) {
      if (elapsed < 0) this.headStart = now; // the clock went back: restart the current bucket
      return;
    }
    const tokens = this.bucketTokens!;
    const requests = this.bucketRequests!;
    const n = tokens.length;
    const steps = Math.floor(elapsed / this.bucketMs);
    if (steps >= n) {
      tokens.fill(0);
      requests.fill(0);
      this.tokens = 0;
      this.requests = 0;
      this.shortRequests = 0;
    } else {
      const short = this.shortBuckets;
      for (let k = 0; k < steps; k++) {
        this.head = this.head + 1 === n ? 0 : this.head + 1;
        this.tokens -= tokens[this.head]!;
        this.requests -= requests[this.head]!;
        tokens[this.head] = 0;
        requests[this.head] = 0;
        // The bucket that now falls out of the newest sixth.
        const out = this.head - short;
        this.shortRequests -= requests[out < 0 ? out + n : out]!;
      }
      if (this.tokens < 1e-9) this.tokens = 0;
      if (this.requests < 1e-9) this.requests = 0;
      if (this.shortRequests < 1e-9) this.shortRequests = 0;
    }
    this.headStart += steps * this.bucketMs;
  }

  /** True while utilization is below 1 and the model is not cooling. */
  isHealthy(): boolean {
    return this.util < 1;
  }

  /** True while a mark-down lasts. */
  isCooling(): boolean {
    if (this.until === 0) return false;
    if (this.clock() < this.until) return true;
    this.until = 0;
    return false;
  }

  /** ms left of the current cooldown (0 when not cooling). */
  get cooldownRemaining(): number {
    return this.isCooling() ? this.until - this.clock() : 0;
  }

  /** Epoch ms at which the cooldown ends, 0 when not cooling. */
  get cooldownUntil(): number {
    return this.isCooling() ? this.until : 0;
  }

  /** Avoid this model for `ms` (default: its configured cooldown). A longer running cooldown is kept. */
  markDown(ms: number = this.cooldown, reason?: string): void {
    const until = this.clock() + Math.max(0, ms);
    if (until <= this.until) return;
    this.until = until;
    this.listener?.(this, { type: 'down', until, reason });
  }

  /** End a cooldown now. */
  markUp(): void {
    const was = this.until;
    this.until = 0;
    this.failures = 0;
    if (was !== 0) this.listener?.(this, { type: 'up' });
  }

  /** Forget usage counted in the current window. */
  resetUsage(): void {
    this.tokens = 0;
    this.requests = 0;
    this.shortRequests = 0;
    this.bucketTokens?.fill(0);
    this.bucketRequests?.fill(0);
  }

  /**
   * @internal Charge (or, with negative tokens, refund) usage. Counters never go below 0: a refund
   * that arrives after a window reset must not eat into the new window.
   */
  spend(tokens: number, requests = 0): void {
    if (this.bucketMs !== 0) this.spendInBuckets(tokens, requests);
    else {
      const t = this.tokens + tokens;
      this.tokens = t > 0 ? t : 0;
      if (requests !== 0) {
        const r = this.requests + requests;
        this.requests = r > 0 ? r : 0;
      }
    }
    if (this.listener) this.listener(this, { type: 'spend', tokens, requests });
  }

  /**
   * A charge goes to the current bucket; a refund comes off the newest buckets first (it undoes a
   * recent charge), and never takes a bucket or the window below zero.
   */
  private spendInBuckets(tokens: number, requests: number): void {
    this.slide();
    this.tokens = this.take(this.bucketTokens!, tokens, this.tokens, false);
    if (requests !== 0)
      this.requests = this.take(this.bucketRequests!, requests, this.requests, true);
  }

  private take(buckets: Float64Array, amount: number, total: number, isRequests: boolean): number {
    if (amount >= 0) {
      buckets[this.head]! += amount;
      if (isRequests) this.shortRequests += amount;
      return total + amount;
    }
    let left = -amount;
    const n = buckets.length;
    for (let k = 0, i = this.head; k < n && left > 0; k++, i = i === 0 ? n - 1 : i - 1) {
      const b = buckets[i]!;
      const used = b < left ? b : left;
      buckets[i] = b - used;
      left -= used;
      if (isRequests && k < this.shortBuckets) this.shortRequests -= used;
    }
    if (this.shortRequests < 0) this.shortRequests = 0;
    const t = total + amount + left;
    return t > 0 ? t : 0;
  }

  /** @internal Restore a cooldown that another instance published (no event is raised). */
  applyCooldown(until: number): void {
    this.until = until > this.clock() ? until : 0;
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

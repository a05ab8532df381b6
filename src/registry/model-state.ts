import type { ModelConfig } from '../config/switchboard-options';
import { UsageWindow } from '../quota/usage-window';

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
 * is healthy while its utilization is below 1. Usage is counted in a {@link UsageWindow}: a fixed
 * one that `resetUsage()` clears, or a sliding one ({@link ModelState.slideUsage}).
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

  private until = 0;
  private failures = 0;
  /** This instance's usage of tokens and requests. */
  private readonly usage: UsageWindow;
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
    this.usage = new UsageWindow(clock);
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

  /** `max(tpmUsage / tpm, rpmUsage / rpm)`, 1 while cooling; unlimited quotas count as 0. */
  get util(): number {
    if (this.until !== 0 && this.isCooling()) return 1;
    const usage = this.usage;
    const shared = this.shared;
    const t = this.tpm > 0 ? (shared ? usage.tokens + shared.tokens : usage.tokens) / this.tpm : 0;
    if (this.rpm === 0) return t;
    let r = (shared ? usage.requests + shared.requests : usage.requests) / this.rpm;
    if (usage.bucketMs !== 0) {
      // Azure enforces RPM as rpm/6 per 10 s: a burst fills that long before the minute does.
      const burst = usage.recentRequests / this.burstLimit;
      if (burst > r) r = burst;
    }
    return t > r ? t : r;
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
    this.usage.configure(windowMs > 0 ? 'sliding' : 'fixed', windowMs, buckets);
    this.burstLimit = Math.max(1, Math.floor(this.rpm / 6));
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
    this.usage.reset();
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

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
 * is healthy while its utilization is below 1.
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
    return this.shared ? this.tokens + this.shared.tokens : this.tokens;
  }

  /** Requests charged in the current window. */
  get rpmUsage(): number {
    return this.shared ? this.requests + this.shared.requests : this.requests;
  }

  /** This instance's own usage, without the shared view. */
  get localUsage(): Readonly<{ tokens: number; requests: number }> {
    return { tokens: this.tokens, requests: this.requests };
  }

  /** `max(tpmUsage / tpm, rpmUsage / rpm)`, 1 while cooling; unlimited quotas count as 0. */
  get util(): number {
    if (this.until !== 0 && this.isCooling()) return 1;
    const t = this.tpm > 0 ? this.tpmUsage / this.tpm : 0;
    const r = this.rpm > 0 ? this.rpmUsage / this.rpm : 0;
    return t > r ? t : r;
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
  }

  /**
   * @internal Charge (or, with negative tokens, refund) usage. Counters never go below 0: a refund
   * that arrives after a window reset must not eat into the new window.
   */
  spend(tokens: number, requests = 0): void {
    const t = this.tokens + tokens;
    this.tokens = t > 0 ? t : 0;
    if (requests !== 0) this.requests += requests;
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

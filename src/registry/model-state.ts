import type { ModelConfig } from '../types';
import { tokensOf, type Admission, type TokenUsage } from '../quota/admission';
import { COOL, hotRow, keptLoad, type HotRow } from '../quota/hot-row';
import { QuotaLedger } from '../quota/quota-ledger';
import { ConsecutiveBreaker } from './consecutive-breaker';
import { Cooldown, cooldownKind, DEFAULT_COOLDOWN } from './cooldown';
import { InFlight, type InFlightView } from './in-flight';
import { LatencyTracker, type LatencyView } from './latency';
import type { ModelEvent } from './model-event';
import type { ModelStateOptions } from './model-state-options';
import type { QuotaView } from './quota-view';
import { DEFAULT_MAX_COOLDOWN, upstreamUsage } from '../runtime/upstream-numbers';

/**
 * One model on one deployment: its identity, its cooldown, a breaker that counts consecutive
 * failures, and its quota accounting ({@link quota}, a {@link QuotaLedger}: usage, limits, the
 * anchoring on the upstream's rate-limit headers).
 *
 * `util` is the largest share of any limit (`tpm`, `rpm`, `itpm`, `otpm`) by the anchored view:
 * usage as the upstream is believed to count it (this instance's, the other instances' through a
 * shared store, and the correction its last headers called for), where `rpm` with a sliding window
 * also weighs the newest sixth against `rpm / 6`; unlimited counts as 0, and it is 1 while
 * cooling (see `QuotaLedger.shares`). A model is healthy while its utilization is below 1; it has room for a call ({@link hasRoom}) while the call's admission charge fits every
 * limit and it is not cooling.
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
  // Declared first, so that a draw finds what it reads in the object's first bytes.
  /** The table of the quota's `HotRow`, where the kept utilization and the cooldown's end are. */
  private readonly table: Float64Array;
  /** Index of the row in {@link table}. */
  private readonly row: number;
  private readonly clock: () => number;
  /** @internal Whether a `maxInFlight` cap applies (without one, {@link inFlight} always has room). */
  readonly capped: boolean;
  readonly name: string;
  /** Default cooldown in ms (every cooldown is capped by `maxCooldown`). */
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
  /**
   * @internal The quota accounting: usage, limits, anchoring on the upstream's headers. Shared
   * with the other members of its {@link quotaPool}.
   */
  readonly quota: QuotaLedger;
  /** The quota pool it draws on with other deployments (`ModelConfig.quotaPool`), if any. */
  readonly quotaPool: string | undefined;
  /** @internal Consecutive upstream failures; open at 3. */
  readonly breaker = new ConsecutiveBreaker(3);
  /**
   * @internal Calls sent and not yet ended, against the `maxInFlight` cap: the dispatch starts
   * and ends them. Readers take {@link inFlightView}.
   */
  readonly inFlight: InFlight;
  /**
   * @internal Recent time to first token and time per output token: the attempts measure it.
   * Readers take {@link latencyView}.
   */
  readonly latency: LatencyTracker;
  /** Tokens a call's prompt estimate plus `max_tokens` may come to (`Infinity`: not checked). */
  readonly contextWindow: number;
  /** This model's own `firstTokenTimeout` (ms; 0: the switchboard's). */
  readonly firstTokenTimeout: number;
  /** This model's own `streamIdleTimeout` (ms; 0: the switchboard's). */
  readonly streamIdleTimeout: number;
  /** Its end as last set is also in the hot row (`COOL`): cooling at `now` iff `now` is before it. */
  private readonly cooling: Cooldown;
  /** Why the current cooldown was set (`markDown`'s reason). */
  private why: string | undefined = undefined;
  /** @internal Set by the registry. */
  listener: ((state: ModelState, event: ModelEvent) => void) | undefined;
  /**
   * @internal Whether the listener wants `spend` events: the registry clears it while nobody
   * listens to its models, so a call's charge makes no event object.
   */
  spendHeard = true;

  constructor(
    config: ModelConfig,
    deployment: string,
    clock: () => number = Date.now,
    options: ModelStateOptions = {},
  ) {
    this.clock = clock;
    this.capped = config.maxInFlight !== undefined && config.maxInFlight > 0;
    this.name = config.name;
    this.upstreamName = config.deployment ?? config.name;
    this.cooldown = config.cooldown ?? DEFAULT_COOLDOWN;
    this.priority = config.priority ?? 0;
    this.weight = config.weight ?? 1;
    this.deployment = deployment;
    this.attributes = Object.freeze({ model: config.name, deployment });
    this.cooling = new Cooldown(options.maxCooldown ?? DEFAULT_MAX_COOLDOWN);
    this.inFlight = new InFlight(config.maxInFlight, () => this.listener?.(this, { type: 'free' }));
    this.latency = new LatencyTracker(clock);
    this.contextWindow = config.contextWindow ?? Infinity;
    this.firstTokenTimeout = config.firstTokenTimeout ?? 0;
    this.streamIdleTimeout = config.streamIdleTimeout ?? 0;
    this.quotaPool = config.quotaPool;
    this.quota =
      options.ledger ??
      new QuotaLedger(
        config,
        clock,
        {
          rules: options.rules,
          upstream: options.upstream,
          levels: options.levels,
          onLimit: (limit, value, was, configured) =>
            this.listener?.(this, { type: 'limit', limit, value, was, configured }),
          onRule: (rule) => this.listener?.(this, { type: 'rule', rule }),
        },
        options.hot,
      );
    // A pool's ledger keeps one row for all its members; each member's cooldown is its own, so a
    // member keeps its cooldown in a row of its own (freed with it), and a draw asks it rather
    // than a row.
    const row = this.quotaPool === undefined ? this.quota.hot : hotRow();
    this.table = row.table;
    this.row = row.row;
  }

  /**
   * @internal The hot row a selector's draw may read this model from alone (`keptRoom`,
   * `keptLoad`), or `undefined` while room depends on the calls in flight too (a `maxInFlight`
   * cap), which the row does not hold, or a quota pool, whose row its members share.
   */
  get drawRow(): HotRow | undefined {
    return this.capped || this.quotaPool !== undefined ? undefined : this.quota.hot;
  }

  /**
   * This model's quota, read-only: limits, usage as the upstream counts it, shares of each limit.
   *
   * @example
   * ```ts
   * const { limits, upstreamRemaining } = state.quotaView;
   * ```
   */
  get quotaView(): QuotaView {
    return this.quota;
  }

  /**
   * Its calls in flight now and its `maxInFlight` cap, read-only.
   *
   * @example
   * ```ts
   * const { count, cap } = state.inFlightView;
   * ```
   */
  get inFlightView(): InFlightView {
    return this.inFlight;
  }

  /**
   * Its recent latency (time to first token, time per output token), read-only.
   *
   * @example
   * ```ts
   * state.latencyView.snapshot(); // { firstTokenMs: 420 }
   * ```
   */
  get latencyView(): LatencyView {
    return this.latency;
  }

  /** The longest cooldown (ms), whatever its source. */
  get maxCooldown(): number {
    return this.cooling.max;
  }

  /** Tokens charged in the current window (this instance's, plus the shared view's). */
  get tpmUsage(): number {
    return this.quota.tokensAt(this.clock());
  }

  /** Requests charged in the current window. */
  get rpmUsage(): number {
    return this.quota.requestsAt(this.clock());
  }

  /** Forget usage counted in the current window. */
  resetUsage(): void {
    this.quota.reset();
  }

  // Questions that weigh the cooldown with the quota, on one reading of the clock.

  /**
   * The largest share of any limit by the anchored view (`QuotaLedger.util`), 1 while cooling;
   * unlimited quotas count as 0.
   */
  get util(): number {
    const now = this.clock();
    // 1 while cooling, else the utilization the quota kept while that holds: what a draw reads.
    const kept = keptLoad(this.table, this.row, now);
    return kept >= 0 ? kept : this.quota.util(now);
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
    return this.hasRoomAt(admission, this.clock());
  }

  /** @internal {@link hasRoom} at `now` (epoch ms), for a routing that read the clock once. */
  hasRoomAt(admission: Admission, now: number): boolean {
    return now >= this.table[this.row + COOL]! && this.quota.hasRoom(admission, now);
  }

  /**
   * ms until a call with this admission charge has room, as usage slides out and cooldowns end (0
   * when it has room now); `Infinity` when it never will; see {@link QuotaLedger.roomAt}.
   */
  roomAt(admission: Admission): number {
    const now = this.clock();
    const wait = this.quota.roomAt(admission, now);
    if (wait === Infinity) return Infinity;
    const cooling = this.cooling.remaining(now);
    return cooling > wait ? cooling : wait;
  }

  /**
   * Why a call with this admission charge cannot go here now: `room` (it can), `quota` (no room
   * by the anchored view, or cooling after a 429: room comes back by itself), or `down` (marked
   * down by hand, or cooling after connection errors or 5xx: no promise of room).
   */
  blockedBy(admission: Admission): 'room' | 'quota' | 'down' {
    const now = this.clock();
    if (this.cooling.at(now)) return this.cooling.kind === 'quota' ? 'quota' : 'down';
    return this.quota.hasRoom(admission, now) ? 'room' : 'quota';
  }

  /** @internal Charge a call's admission before it is sent. Returns when (epoch ms), for {@link observe}. */
  admit(admission: Admission): number {
    const at = this.quota.admit(admission);
    this.spent(tokensOf(admission), 1);
    return at;
  }

  /** @internal Reconcile an admitted call with what its answer says it used; see {@link QuotaLedger.settle}. */
  settle(admission: Admission, usage: TokenUsage | undefined): void {
    this.spent(this.quota.settle(admission, upstreamUsage(usage)), 0);
  }

  /**
   * @internal An admitted call sent at `sentAt` (epoch ms) was answered whole: its charge is
   * reconciled with `usage` ({@link settle}) and its latency counted, on one reading of the clock.
   */
  answered(admission: Admission, usage: TokenUsage | undefined, sentAt: number): void {
    const now = this.clock();
    const used = upstreamUsage(usage);
    this.spent(this.quota.settle(admission, used, now), 0);
    this.latency.answered(sentAt, used?.output, now);
  }

  /** @internal An admitted call failed before the upstream produced anything: its tokens go back. */
  release(admission: Admission): void {
    this.spent(this.quota.release(admission), 0);
  }

  /**
   * @internal Charge (or, with negative tokens, refund) usage. Counters never go below 0: a refund
   * that arrives after a window reset must not eat into the new window.
   */
  spend(tokens: number, requests = 0): void {
    this.quota.spend(tokens, requests);
    this.listener?.(this, { type: 'spend', tokens, requests });
  }

  /** Tell the registry what a call charged, unless nothing. */
  private spent(tokens: number, requests: number): void {
    if (this.spendHeard && this.listener !== undefined && (tokens !== 0 || requests !== 0)) {
      this.listener(this, { type: 'spend', tokens, requests });
    }
  }

  // The cooldown.

  /** True while a mark-down lasts. */
  isCooling(): boolean {
    return this.cooling.at(this.clock());
  }

  /** ms left of the current cooldown (0 when not cooling). */
  get cooldownRemaining(): number {
    return this.cooling.remaining(this.clock());
  }

  /** Epoch ms at which the cooldown ends, 0 when not cooling. */
  get cooldownUntil(): number {
    return this.cooling.until(this.clock());
  }

  /**
   * Avoid this model for `ms` (default: its configured cooldown), at most `maxCooldown`. A longer
   * running cooldown is kept. Without a `reason` it counts as marked down by hand: when every
   * deployment of a model is, calls still go out on a best-effort basis.
   */
  markDown(ms: number = this.cooldown, reason?: string): void {
    const until = this.cooling.extend(this.clock(), ms, cooldownKind(reason));
    if (until === 0) return;
    this.table[this.row + COOL] = until;
    this.why = reason;
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
    this.breaker.success();
    this.why = undefined;
    this.table[this.row + COOL] = 0;
    if (this.cooling.clear()) this.listener?.(this, { type: 'up' });
  }

  /**
   * @internal Restore a cooldown that another instance published (no event is raised), at most
   * `maxCooldown` from now: a shared 429 keeps the others off, and room comes back by itself.
   */
  applyCooldown(until: number): void {
    this.why = undefined;
    const now = this.clock();
    this.cooling.restore(until, now, 'quota');
    this.table[this.row + COOL] = this.cooling.until(now);
  }

  /** @internal Count a consecutive upstream failure; returns the count so far (the breaker opens at 3). */
  recordFailure(): number {
    this.breaker.failure();
    return this.breaker.failures;
  }

  /** @internal A success ends a run of failures. */
  recordSuccess(): void {
    this.breaker.success();
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      tpm: this.quota.limits.tpm.value,
      rpm: this.quota.limits.rpm.value,
      tpmUsage: this.tpmUsage,
      rpmUsage: this.rpmUsage,
      util: this.util,
      cooling: this.isCooling(),
      cooldownRemaining: this.cooldownRemaining,
    };
  }
}

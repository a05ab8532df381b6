import type { ChargePolicy } from './admission';
import type { CounterScope, LimitCounter } from './limit-counter';
import type { PeerUsage } from './peer-usage';
import type { LimitName, QuotaLimit } from './quota-limit';
import type { ReportedRemaining } from './reading';
import { forget, type HotRow } from './hot-row';
import type { LedgerCounters, QuotaRules } from './rules/quota-rules';
import type { UpstreamKind } from './upstream-kind';
import { usageBuckets, WindowCount, type UsageBucket } from './window-count';

/** Span of the anchoring correction when usage is counted in a fixed window. */
export const DEFAULT_SPAN = 60_000;

/** What a ledger is made of: its limits, its rules and the counters they built over one scope. */
interface LedgerParts {
  limits: Readonly<Record<LimitName, QuotaLimit>>;
  rules: QuotaRules;
  counters: LedgerCounters;
  scope: CounterScope;
  hot: HotRow;
  clock: () => number;
}

/**
 * What a `QuotaLedger` shows of one model's quota on one deployment, apart from admitting calls
 * and reading answers: its counters by limit, the usage they hold (own, the peers', as the
 * upstream is believed to count it), each limit's share, and the window they count over. Its
 * state is the counters' that the upstream's rules built.
 *
 * @example
 * ```ts
 * const { tpm, rpm } = ledger.anchoredUsage();
 * ```
 */
export abstract class LedgerReadout {
  /** The counters with a limit in force; undefined when a limit changed. */
  protected gating: readonly LimitCounter[] | undefined = undefined;

  /** The limits in force, configured or learned. */
  readonly limits: Readonly<Record<LimitName, QuotaLimit>>;
  /** The upstream's rules: its counters, charge, headers and what it teaches. */
  readonly rules: QuotaRules;
  /** @internal The counters the rules built. */
  readonly counters: LedgerCounters;
  /** @internal What the counters share: the window's span, the peers' usage, the readings. */
  readonly scope: CounterScope;
  /** @internal What a draw reads of this quota: its utilization and each limit's room. */
  readonly hot: HotRow;
  protected readonly clock: () => number;

  constructor(parts: LedgerParts) {
    this.limits = parts.limits;
    this.rules = parts.rules;
    this.counters = parts.counters;
    this.scope = parts.scope;
    this.hot = parts.hot;
    this.clock = parts.clock;
  }

  /** A limit or an interval changed: what was kept of the counters is stale. */
  changed(): void {
    this.gating = undefined;
    forget(this.hot);
  }

  /** `tpm`. */
  get tokens() {
    return this.counters.tokens;
  }

  /** `rpm`. */
  get requests() {
    return this.counters.requests;
  }

  /** Requests over a shorter interval: Azure's 10 s or 1 s window, a bucket upstream's second. */
  get burst() {
    return this.counters.burst;
  }

  /** `itpm`. */
  get input() {
    return this.counters.input;
  }

  /** `otpm`. */
  get output() {
    return this.counters.output;
  }

  /** A provisioned (PTU) deployment's utilization, over the tokens counter; else `undefined`. */
  get utilization() {
    return this.counters.utilization;
  }

  /** How the upstream reconciles its admission charge. */
  get charge(): ChargePolicy {
    return this.rules.policy;
  }

  /** Whose rules the upstream follows (a PTU's are Azure's). */
  get upstream(): UpstreamKind {
    return this.rules.kind === 'azure-ptu' ? 'azure' : this.rules.kind;
  }

  /** Usage other instances reported; written by a shared state store. */
  get shared(): PeerUsage | undefined {
    return this.scope.peers;
  }

  set shared(usage: PeerUsage | undefined) {
    forget(this.hot);
    this.scope.peers = usage;
  }

  /**
   * Count usage over a sliding window of `windowMs` instead of a fixed one that only
   * {@link reset} clears (`0` switches back); see {@link WindowCount}. Usage stays.
   */
  slide(windowMs: number, buckets = 120): void {
    const kind = windowMs > 0 ? 'sliding' : 'fixed';
    this.changed();
    for (const counter of [this.tokens, this.requests, this.input, this.output]) {
      counter.window.configure(kind, windowMs, buckets);
    }
    this.scope.span = windowMs > 0 ? windowMs : DEFAULT_SPAN;
  }

  /** Length (ms) of the window usage is counted over (the corrections' span in the fixed kind). */
  get windowMs(): number {
    return this.scope.span;
  }

  /** Length (ms) of a bucket of the sliding window usage is counted in; 0 in the fixed kind. */
  get bucketMs(): number {
    const tokens = this.tokens.window;
    return tokens instanceof WindowCount ? tokens.bucketMs : 0;
  }

  /** This instance's own tokens and requests per bucket, as a shared state store publishes them. */
  ownBuckets(now = this.clock()): UsageBucket[] {
    return usageBuckets(this.tokens.window, this.requests.window, now);
  }

  /** Calls admitted and not yet answered. */
  get inFlight(): Readonly<{ tokens: number; requests: number }> {
    return { tokens: this.tokens.inFlight, requests: this.requests.inFlight };
  }

  /** Tokens charged in the window at `now`: this instance's plus the shared view's. */
  tokensAt(now: number): number {
    return this.tokens.total(now);
  }

  /** Requests charged in the window at `now`: this instance's plus the shared view's. */
  requestsAt(now: number): number {
    return this.requests.total(now);
  }

  /** This instance's own tokens and requests at `now`, without the shared view. */
  localUsage(now = this.clock()): { tokens: number; requests: number } {
    return { tokens: this.tokens.window.at(now), requests: this.requests.window.at(now) };
  }

  /** Input and output tokens charged in the window at `now` (tracked for every model). */
  ioUsage(now = this.clock()): { input: number; output: number } {
    return { input: this.input.window.at(now), output: this.output.window.at(now) };
  }

  /** The upstream's last reported remaining per limit (only limits its headers reported). */
  get upstreamRemaining(): Readonly<Partial<Record<LimitName, ReportedRemaining>>> {
    return this.scope.reported;
  }

  /**
   * Forget what upstream windows that ended by `now` counted, and readings below a configured
   * limit that no answer renewed within their window.
   */
  protected catchUp(now: number): void {
    this.tokens.catchUp(now);
    this.requests.catchUp(now);
    const { tpm, rpm, itpm, otpm } = this.limits;
    if (tpm.lapse(now) || rpm.lapse(now) || itpm.lapse(now) || otpm.lapse(now)) this.changed();
  }

  /** Usage per limit as the upstream is believed to count it at `now` (ours, peers', correction). */
  anchoredUsage(now = this.clock()): Record<LimitName, number> {
    this.catchUp(now);
    const [tpm, rpm] = [this.tokens.used(now), this.requests.used(now)];
    return { tpm, rpm, itpm: this.input.used(now), otpm: this.output.used(now) };
  }

  /**
   * Each limit's share at `now`, by the anchored view (0 when unlimited); for `rpm` the larger of
   * the minute's share and the shorter interval's. {@link util} is the largest of them.
   */
  shares(now = this.clock()): Record<LimitName, number> {
    this.catchUp(now);
    const [rpm, burst] = [this.requests.share(now), this.burst.share(now)];
    const [tpm, itpm, otpm] = [
      this.tokens.share(now),
      this.input.share(now),
      this.output.share(now),
    ];
    return { tpm, rpm: burst > rpm ? burst : rpm, itpm, otpm };
  }

  /** The requests of the shorter interval by the anchored view, and what it allows; else `undefined`. */
  recent(now = this.clock()): { used: number; limit: number } | undefined {
    return this.burst.active ? { used: this.burst.used(now), limit: this.burst.limit } : undefined;
  }

  /** Charge (or refund, negative) outside a call's admission; usage never goes below 0. */
  spend(tokens: number, requests = 0): void {
    forget(this.hot);
    const now = this.clock();
    if (tokens !== 0) this.tokens.window.add(tokens, now);
    if (requests !== 0) this.requests.window.add(requests, now);
  }
}

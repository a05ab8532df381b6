import type { ModelConfig } from '../types';
import {
  reconcile,
  tokensOf,
  type Admission,
  type ChargePolicy,
  type TokenUsage,
} from './admission';
import { BurstCounter } from './burst-counter';
import {
  counterScope,
  fits,
  gatingOf,
  type Anchoring,
  type CounterScope,
  type LimitCounter,
} from './limit-counter';
import { InputCounter } from './input-counter';
import type { PeerUsage } from './peer-usage';
import { limitsOf, type LimitName, type QuotaLimit } from './quota-limit';
import { AnswerLog } from './answer-log';
import {
  requestsPerMinute,
  type HeaderSource,
  type RateLimitFamily,
  type RateLimitReading,
  type ReportedLimit,
} from './rate-limit-headers';
import {
  liveParts,
  type QuotaLedgerOptions,
  type ReportedRemaining,
  type SharedReading,
} from './reading';
import { CachedPrefixes } from './cached-prefixes';
import { WindowCount, usageBuckets, type UsageBucket } from './window-count';
import { DrainCount } from './drain-count';
import {
  fitsRoom,
  forget,
  hotRow,
  keptFor,
  keptUtil,
  measure,
  RESERVE,
  type HotRow,
} from './hot-row';
import { OutputCounter } from './output-counter';
import { OutputEstimate } from './output-estimate';
import { shortLimit } from './request-window';
import type { UpstreamKind } from './upstream-kind';
import { RequestsCounter } from './requests-counter';
import { TokensCounter } from './tokens-counter';
import type { UsageCounter } from './usage-counter';
import { UtilizationCounter } from './utilization-counter';

export type { PeerUsage } from './peer-usage';
export type { QuotaLedgerOptions } from './reading';

/** Span of the anchoring correction when usage is counted in a fixed window. */
const DEFAULT_SPAN = 60_000;

/**
 * Output tokens charged for each output of a call without a cap, per kind of upstream, until
 * `outputReservation` is configured or the upstream's answers show its own reservation. Azure
 * OpenAI reserves a model-dependent default, measured at 16 on gpt-3.5 and 648 on gpt-4o: the
 * current models' 648 is taken (too much for an old model costs room until its first answer
 * shows less; too little sends calls into 429s). OpenAI's guide charges the larger of
 * `max_tokens` and the estimated tokens, which without a cap is the prompt: none. Anthropic
 * requires `max_tokens`: none.
 *
 * @example
 * ```ts
 * DEFAULT_OUTPUT_RESERVATION.azure; // 648
 * ```
 */
export const DEFAULT_OUTPUT_RESERVATION: Readonly<Record<UpstreamKind, number>> = Object.freeze({
  azure: 648,
  openai: 0,
  anthropic: 0,
});

/**
 * The quota accounting of one model on one deployment: one counter per limit (tokens, requests,
 * the requests of Azure's 10 s window, input and output tokens), each with its usage, its
 * correction from the upstream's rate-limit headers, its window roll and the peers' usage. The
 * ledger loops over them: a call has room when every counter fits it ({@link hasRoom}), `util`
 * is the largest share, {@link roomAt} the longest wait, and an answer's reading is handed part
 * by part to the counter of each limit ({@link observe}). Cooldowns are its owner's business.
 *
 * Every operation reads the clock at most once; the methods that take `now` (epoch ms) share an
 * owner's reading. An idle model's {@link util} is kept until a charge, an answer or time changes it.
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
  /** `tpm`. */
  readonly tokens: TokensCounter;
  /** `rpm`. */
  readonly requests: RequestsCounter;
  /** `rpm / 6` per 10 s (or `rpm / 60` per 1 s): Azure's short request window. */
  readonly burst: BurstCounter;
  /** `itpm`. */
  readonly input: InputCounter;
  /** `otpm`. */
  readonly output: OutputCounter;
  /** A provisioned (PTU) deployment's utilization, over the tokens counter; else `undefined`. */
  readonly utilization: UtilizationCounter | undefined;
  /** Every counter, in the order they are asked. */
  private counters: readonly LimitCounter[];
  /** Limits a shared store adds, asked after the ledger's own (see {@link gate}). */
  private gates: readonly LimitCounter[] = [];
  /** The counters with a limit in force ({@link gatingOf}); undefined when a limit changed. */
  private gating: readonly LimitCounter[] | undefined = undefined;
  /** The counters a single call can be too big for. */
  private readonly capped: readonly (TokensCounter | InputCounter | OutputCounter)[];
  private readonly scope: CounterScope;
  private readonly family: RateLimitFamily | undefined;
  /** Whose rules the upstream follows. */
  readonly upstream: UpstreamKind;
  private readonly answers: AnswerLog;
  /** Whether the request window was configured: then no header changes it. */
  private readonly requestWindowSet: boolean;
  /** Output tokens the upstream reserves for each output of a call without a cap. */
  private reservation: number;
  /** Whether {@link reservation} was configured: then no answer changes it. */
  private readonly reservationSet: boolean;
  /**
   * Claude's output expected of a call (the upstream counts what answers produce, not
   * `max_tokens`); `undefined` where the cap is charged.
   */
  private readonly expected: OutputEstimate | undefined;
  /** The prompt prefixes cached on this deployment for this model, from its answers. */
  private readonly cached = new CachedPrefixes();
  /** Whether cache reads count toward `itpm` (the old rule, for models that keep it). */
  private readonly cacheReadsCountInput: boolean;
  /** A call's charge as priced here, rewritten by each {@link priced} (see there). */
  private readonly quote: Admission = { input: 0, output: 0, reserve: undefined };
  /** @internal {@link util} as last computed, and the clock readings it holds for ({@link HotRow}). */
  readonly hot: HotRow;

  constructor(
    limits: Pick<
      ModelConfig,
      | 'tpm'
      | 'rpm'
      | 'itpm'
      | 'otpm'
      | 'requestWindow'
      | 'outputReservation'
      | 'cacheReadsCountInput'
      | 'provisioned'
      | 'outputWeight'
    >,
    private readonly clock: () => number = Date.now,
    options: QuotaLedgerOptions = {},
    /** Where it keeps what a draw reads: a row of its registry's table, else one of its own. */
    hot: HotRow = hotRow(),
  ) {
    this.hot = hot;
    this.charge = options.charge ?? 'reserve';
    this.family = options.headers;
    this.answers = new AnswerLog(options.headers);
    const stale = () => {
      this.gating = undefined;
      forget(this.hot);
    };
    const scope = (this.scope = counterScope(DEFAULT_SPAN, options.onLimit, stale));
    this.limits = limitsOf(limits);
    this.upstream = options.upstream ?? (options.headers === 'anthropic' ? 'anthropic' : 'azure');
    // Each counter owns its window; the 10 s one counts the newest sixth of the requests'. OpenAI's
    // tokens and requests are buckets that refill continuously, with no short request window: the
    // burst counter then reads a window that never slides, and stays inactive.
    // A provisioned deployment's utilization drains continuously too, at its capacity.
    const buckets = this.upstream === 'openai' || limits.provisioned === true;
    const tokens = buckets
      ? new DrainCount(() => this.limits.tpm.value, clock)
      : new WindowCount(clock);
    const requests = buckets
      ? new DrainCount(() => this.limits.rpm.value, clock)
      : new WindowCount(clock, true);
    this.tokens = new TokensCounter(this.limits.tpm, tokens, scope);
    this.requests = new RequestsCounter(this.limits.rpm, requests, scope);
    this.utilization =
      limits.provisioned === true
        ? new UtilizationCounter(this.tokens, limits.outputWeight ?? 1)
        : undefined;
    const short = requests instanceof WindowCount ? requests : new WindowCount(clock, true);
    this.burst = new BurstCounter(this.limits.rpm, short, scope, this.requests.order);
    this.requestWindowSet = limits.requestWindow !== undefined;
    this.reservationSet = limits.outputReservation !== undefined;
    this.reservation = limits.outputReservation ?? DEFAULT_OUTPUT_RESERVATION[this.upstream];
    if (limits.requestWindow !== undefined) this.burst.period = limits.requestWindow;
    // Anthropic's input and output limits are token buckets: usage drains at the limit a minute.
    const io = (limit: QuotaLimit) =>
      options.headers === 'anthropic'
        ? new DrainCount(() => limit.value, clock)
        : new WindowCount(clock);
    this.input = new InputCounter(this.limits.itpm, io(this.limits.itpm), scope);
    this.cacheReadsCountInput = limits.cacheReadsCountInput === true;
    // Where answers settle the actual output, a call is charged the output expected of it.
    this.expected = this.charge === 'actual' ? new OutputEstimate() : undefined;
    this.output = new OutputCounter(this.limits.otpm, io(this.limits.otpm), scope, this.expected);
    this.counters = [
      this.utilization ?? this.tokens,
      this.requests,
      this.burst,
      this.input,
      this.output,
    ];
    // A provisioned deployment admits a call of any size below 100 %: none is too big for it.
    this.capped = this.utilization
      ? [this.input, this.output]
      : [this.tokens, this.input, this.output];
  }

  /** The counters with a limit in force, the utilization in the tokens' place on a PTU. */
  private gatingCounters(): readonly LimitCounter[] {
    return (this.gating ??= gatingOf({
      tokens: this.utilization ?? this.tokens,
      requests: this.requests,
      burst: this.burst,
      input: this.input,
      output: this.output,
    }).concat(this.gates));
  }

  /**
   * @internal Add limits of a shared store's making (a replica's leases): they gate every
   * admission as the ledger's own limits do, and hear of every charge.
   */
  gate(counters: readonly LimitCounter[]): void {
    this.counters = this.counters.filter((c) => !this.gates.includes(c)).concat(counters);
    this.gates = counters;
    this.gating = undefined;
    forget(this.hot);
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
   * {@link reset} clears (`0` switches back); see {@link WindowCount}. {@link util} then also
   * weighs the requests of the newest sixth of the window against `rpm / 6`. Usage stays.
   */
  slide(windowMs: number, buckets = 120): void {
    const kind = windowMs > 0 ? 'sliding' : 'fixed';
    forget(this.hot);
    this.gating = undefined;
    this.tokens.window.configure(kind, windowMs, buckets);
    this.requests.window.configure(kind, windowMs, buckets);
    this.input.window.configure(kind, windowMs, buckets);
    this.output.window.configure(kind, windowMs, buckets);
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

  /**
   * This instance's own tokens and requests per bucket, as a shared state store publishes them
   * (see {@link usageBuckets}).
   */
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
  private catchUp(now: number): void {
    this.tokens.catchUp(now);
    this.requests.catchUp(now);
    const { tpm, rpm, itpm, otpm } = this.limits;
    if (tpm.lapse(now) || rpm.lapse(now) || itpm.lapse(now) || otpm.lapse(now)) {
      this.gating = undefined;
      forget(this.hot);
    }
  }

  /**
   * Usage per limit as the upstream is believed to count it at `now`: ours, plus the shared
   * view, plus the correction its last headers called for.
   */
  anchoredUsage(now = this.clock()): Record<LimitName, number> {
    this.catchUp(now);
    return {
      tpm: this.tokens.used(now),
      rpm: this.requests.used(now),
      itpm: this.input.used(now),
      otpm: this.output.used(now),
    };
  }

  /** The largest share of any limit over the anchored view; unlimited counts as 0. */
  util(now = this.clock()): number {
    const kept = keptUtil(this.hot, now);
    if (kept >= 0) return kept;
    this.catchUp(now);
    // Others' usage (a store updates it in place) changes with time: it is not kept.
    // A combined limit charges the expected output, which its room in the row cannot say.
    const keeps =
      this.scope.peers === undefined &&
      (this.expected === undefined || !(this.limits.tpm.value > 0));
    // What an uncapped call is charged here, for a draw that reads the row alone.
    this.hot.table[this.hot.row + RESERVE] = this.expected === undefined ? this.reservation : -1;
    return measure(this.hot, this.gatingCounters(), now, keeps);
  }

  /**
   * Each limit's share at `now`, by the anchored view: usage / limit, 0 when unlimited; for `rpm`
   * the larger of the window's share and the newest sixth's (against `rpm / 6`, with a sliding
   * window). {@link util} is the largest of them: what an operator sees per limit adds up to it.
   */
  shares(now = this.clock()): Record<LimitName, number> {
    this.catchUp(now);
    const rpm = this.requests.share(now);
    const burst = this.burst.share(now);
    return {
      tpm: this.tokens.share(now),
      rpm: burst > rpm ? burst : rpm,
      itpm: this.input.share(now),
      otpm: this.output.share(now),
    };
  }

  /**
   * With a sliding window and an `rpm`: the requests of the newest sixth of the window by the
   * anchored view, and what the upstream allows there (`rpm / 6`); else `undefined`.
   */
  recent(now = this.clock()): { used: number; limit: number } | undefined {
    if (!this.burst.active) return undefined;
    return { used: this.burst.used(now), limit: this.burst.limit };
  }

  /** Output tokens charged now for each output of a call that sets no cap. */
  get outputReservation(): number {
    return this.reservation;
  }

  /**
   * What a call is charged here, at `now`: its own admission, except where this deployment
   * charges otherwise. A call without an output cap is charged the upstream's reservation for
   * each of its outputs; on Claude, the output expected of it (at most its cap and the limit), and
   * its input less the prefix cached here (unless cache reads count toward `itpm`).
   */
  private priced(admission: Admission, now: number): Admission {
    const asked = admission.asked;
    if (
      asked === undefined &&
      admission.uncapped === undefined &&
      this.expected === undefined &&
      admission.cachePrefix === undefined &&
      this.utilization === undefined
    ) {
      return admission;
    }
    let input = asked?.input ?? admission.input;
    let output = asked?.output ?? admission.output;
    if (admission.uncapped !== undefined) output = this.reservation * admission.uncapped;
    if (this.expected !== undefined) {
      output = this.expected.of(output);
      const otpm = this.limits.otpm.value;
      if (otpm > 0 && output > otpm) output = otpm;
    }
    const prefix = admission.cachePrefix;
    // Claude's cache reads and a provisioned deployment's cached input are free; Azure's standard
    // deployments and OpenAI count cached input toward their token limit.
    if (
      prefix !== undefined &&
      !this.cacheReadsCountInput &&
      (this.upstream === 'anthropic' || this.utilization !== undefined)
    ) {
      input = Math.max(0, input - this.cached.tokensOf(prefix, now));
    }
    if (this.utilization !== undefined) output = this.utilization.weigh(output);
    // Read by the counters and let go before the public call that priced it returns: one object
    // per ledger, rewritten, rather than a copy of the admission per candidate of every draw.
    const quote = this.quote;
    quote.input = input;
    quote.output = output;
    quote.reserve = admission.reserve;
    return quote;
  }

  /** True when a call with this admission charge fits every limit at `now`, by the anchored view. */
  hasRoom(admission: Admission, now = this.clock()): boolean {
    return this.hasRoomPriced(this.priced(admission, now), now);
  }

  /** {@link hasRoom} of a charge already priced here. */
  private hasRoomPriced(admission: Admission, now: number): boolean {
    // One pass keeps the utilization and each limit's room (a draw weighs the load next); while
    // they hold, room is read from there (a learned limit may owe a probe: asked below).
    if (this.scope.peers === undefined && (admission.reserve ?? 0) <= 0) {
      this.util(now);
      if (keptUtil(this.hot, now) >= 0) {
        const room = fitsRoom(this.hot.table, this.hot.row, admission);
        if (room || !this.anyLearned()) return room;
      }
    }
    this.catchUp(now);
    const gating = this.gatingCounters();
    for (const counter of gating) {
      if (!fits(counter, admission, now) && this.probe(counter, admission, now) === undefined)
        return false;
    }
    return true;
  }

  /**
   * The limit a call may probe: only a value learned from headers says it can never fit, and no
   * probe went this window. A header may have said too little (a proxy, a limit lowered for a
   * moment): one call per window goes, and its answer says the limit again.
   */
  private probe(counter: LimitCounter, admission: Admission, now: number): QuotaLimit | undefined {
    const limit = (counter as Partial<UsageCounter>).limit;
    if (limit === undefined || !this.capped.includes(counter as TokensCounter)) return undefined;
    return limit.probeDue(counter.charge(admission), now, this.scope.span) ? limit : undefined;
  }

  /**
   * ms from `now` until a call with this admission charge has room as usage slides out (0 when
   * it has room now); `Infinity` when it never will (see {@link exceeds}). An upper bound:
   * corrections fade out sooner than it assumes.
   */
  roomAt(admission: Admission, now = this.clock()): number {
    admission = this.priced(admission, now);
    if (this.tooBig(admission, now) !== undefined) return Infinity;
    if (this.hasRoomPriced(admission, now)) return 0;
    let wait = 0;
    for (const counter of this.counters) {
      const w = counter.wait(admission, now);
      if (w > wait) wait = w;
    }
    if (!Number.isFinite(wait)) wait = this.scope.span;
    // The row may hold a draining count as it was a moment ago (a little less room than now):
    // what it holds back, it holds until it lapses, which a waiting call then waits for.
    if (wait <= 0) wait = keptFor(this.hot, now);
    return Math.ceil(wait);
  }

  /**
   * The first limit a call with this admission charge can never fit (its charge is above the
   * limit itself), or `undefined` when it fits an empty window.
   */
  exceeds(
    admission: Admission,
    now = this.clock(),
  ): { limit: LimitName; value: number; charge: number } | undefined {
    return this.tooBig(this.priced(admission, now), now);
  }

  /** {@link exceeds} of a charge already priced here; a limit owing a probe is not one. */
  private tooBig(
    admission: Admission,
    now: number,
  ): { limit: LimitName; value: number; charge: number } | undefined {
    for (const counter of this.capped) {
      const charge = counter.exceeds(admission);
      if (charge === undefined || counter.limit.probeDue(charge, now, this.scope.span)) continue;
      return { limit: counter.limit.name, value: counter.limit.value, charge };
    }
    return undefined;
  }

  /** Whether any limit in force came from the headers (it may owe a probe). */
  private anyLearned(): boolean {
    const { tpm, itpm, otpm } = this.limits;
    return tpm.learned || itpm.learned || otpm.learned;
  }

  /**
   * Charge a call's admission (one request, its input and reserved output) before it is sent.
   * Returns when (epoch ms): the headers of its answer speak of that moment, so pass it to
   * {@link observe}.
   */
  admit(admission: Admission): number {
    const now = this.clock();
    // The call is charged as this deployment prices it from now on (settle and release too); its
    // own charge is kept for another deployment to price afresh.
    const priced = this.priced(admission, now);
    if (priced !== admission) {
      admission.asked ??= { input: admission.input, output: admission.output };
      admission.input = priced.input;
      admission.output = priced.output;
    }
    forget(this.hot);
    for (const counter of this.capped) this.probe(counter, admission, now)?.probed(now);
    for (const counter of this.counters) counter.admit(admission, now);
    this.answers.admitted(admission, now);
    return now;
  }

  /**
   * No longer in flight. True when its own answer's headers were anchored on: our count then
   * already agrees with the upstream's about it.
   */
  private answered(admission: Admission): boolean {
    forget(this.hot);
    for (const counter of this.counters) counter.answered(admission);
    return this.answers.answered(admission);
  }

  /**
   * The answer to an admitted call reports what it used: reconcile as the upstream does (see
   * {@link ChargePolicy}). Once per admission, `usage` undefined when the answer did not say (the
   * admission charge stays); `now` the clock's reading, when the caller has one. Returns the
   * tokens charged (negative: refunded).
   */
  settle(admission: Admission, usage: TokenUsage | undefined, now?: number): number {
    this.answered(admission);
    if (usage === undefined) return 0;
    const change =
      this.utilization?.reconcile(admission, usage) ??
      reconcile(this.charge, admission, usage, this.cacheReadsCountInput);
    if (this.expected !== undefined || admission.cachePrefix !== undefined) {
      now ??= this.clock();
      this.learn(admission, usage, now);
    }
    const { input, output } = change;
    if (input === 0 && output === 0) return 0;
    now ??= this.clock();
    for (const counter of this.counters) counter.settle(input, output, now);
    return tokensOf(change);
  }

  /**
   * What an answer teaches of the next calls: the output it produced, and that its prompt
   * prefix is cached here (read or written, it lives five minutes from now).
   */
  private learn(admission: Admission, usage: TokenUsage, now: number): void {
    this.expected?.answered(usage.output);
    const prefix = admission.cachePrefix;
    const tokens = (usage.cacheRead ?? 0) || (usage.cacheWrite ?? 0);
    if (prefix !== undefined && tokens > 0) this.cached.used(prefix, tokens, now);
  }

  /**
   * An admitted call failed before the upstream produced anything: its tokens go back, the
   * request stays counted. Returns the tokens refunded (as a negative charge).
   */
  release(admission: Admission): number {
    // Its own answer's headers already set our count to the upstream's, which has its charge in
    // it if it counted it: giving the tokens back would count them out twice.
    if (this.answered(admission)) return 0;
    const tokens = tokensOf(admission);
    if (tokens === 0) return 0;
    const now = this.clock();
    for (const counter of this.counters) counter.settle(-admission.input, -admission.output, now);
    return -tokens;
  }

  /**
   * Anchor on an answer's rate-limit headers (`x-ratelimit-*`, `anthropic-ratelimit-*`): each
   * value goes to its limit's counter, which learns the limit and corrects its view by the
   * upstream's count. `own` is the admission of the call this answer is for, while it is still
   * in flight, and `sentAt` when it was admitted (what {@link admit} returned). Costs one or two
   * header lookups when there are none, and one clock read when there are.
   */
  observe(headers: HeaderSource, own?: Admission, sentAt?: number): void {
    const { tpm, rpm, itpm, otpm } = this.limits;
    const doubt = tpm.doubtful || rpm.doubtful || itpm.doubtful || otpm.doubtful;
    const reading = this.answers.read(headers, doubt);
    if (reading === undefined) return;
    forget(this.hot);
    const now = this.clock();
    this.catchUp(now);
    if (own?.uncapped !== undefined) this.learnReservation(reading, own, now);
    const context = this.answers.ownAnswer(reading, own, sentAt, now, this.scope.span);
    if (this.family !== 'anthropic') context.headers = headers;
    this.apply(reading, context);
  }

  /**
   * An uncapped call's own answer, read while no other call of ours was on its way: how far the
   * upstream's remaining tokens dropped beyond our count is what it reserved for the call's
   * output beyond what we charged. The reservation becomes what it reserved, and the call's
   * charge follows (unless `outputReservation` is configured).
   */
  private learnReservation(reading: RateLimitReading, own: Admission, now: number): void {
    const reported = reading.tokens;
    const tpm = this.limits.tpm.value;
    const n = own.uncapped!;
    if (this.reservationSet || reported?.remaining === undefined || !(tpm > 0)) return;
    if (this.tokens.inFlight !== tokensOf(own)) return;
    const ours = this.tokens.counted(now) + this.tokens.correction.at(now, this.scope.span);
    const more = tpm - reported.remaining - ours;
    const reservation = Math.round(own.output / n + more / n);
    if (!(reservation >= 0) || reservation === this.reservation) return;
    this.reservation = reservation;
    forget(this.hot);
    const charge = reservation * n - own.output;
    own.output += charge;
    for (const counter of this.counters) counter.settle(0, charge, now);
    this.tokens.inFlight += charge;
  }

  /**
   * Anthropic's `tokens-*` is the most restrictive limit in effect: the sum of the input and
   * output buckets (then it says nothing their counters do not, and is not a limit of its own),
   * or a workspace's combined limit below it.
   */
  private isIoSum(reading: RateLimitReading): boolean {
    if (this.family !== 'anthropic') return false;
    const limit = reading.tokens?.limit;
    if (limit === undefined) return !(this.limits.tpm.value > 0);
    const io =
      (reading.input?.limit ?? this.limits.itpm.value) +
      (reading.output?.limit ?? this.limits.otpm.value);
    return io > 0 && limit >= io;
  }

  /** Hand each value of a reading to its limit's counter. */
  private apply(reading: RateLimitReading, context: Anchoring): void {
    if (reading.tokens && !this.isIoSum(reading)) this.tokens.anchor(reading.tokens, context);
    if (reading.requests) {
      // OpenAI's requests header speaks of its minute's bucket, Azure's of its short window.
      if (this.upstream === 'openai') this.requests.anchor(reading.requests, context);
      else if (this.family === 'openai') this.anchorShortWindow(reading.requests, context);
      else if (this.burst.claims(reading.requests)) this.burst.anchor(reading.requests, context);
      else this.requests.anchor(reading.requests, context);
    }
    if (reading.input) this.input.anchor(reading.input, context);
    if (reading.output) this.output.anchor(reading.output, context);
  }

  /**
   * Azure's requests header speaks of its short window: its limit teaches `rpm` (six 10 s windows)
   * when none is configured, never replaces a configured one, and its remaining corrects the count
   * of that window only, never the minute's. A limit of `rpm / 60` where `rpm / 6` was expected
   * says the window is 1 s (unless `requestWindow` is configured).
   */
  private anchorShortWindow(reported: ReportedLimit, context: Anchoring): void {
    const rpm = this.limits.rpm;
    const limit = reported.limit;
    if (limit !== undefined && context.peer === undefined) {
      if (!(rpm.configured !== undefined && rpm.configured > 0)) {
        const perMinute = requestsPerMinute(limit, 'openai', this.burst.period);
        this.scope.learned(rpm, perMinute, context.now);
      } else if (
        !this.requestWindowSet &&
        limit !== shortLimit(rpm.value, this.burst.period) &&
        (limit === shortLimit(rpm.value, '1s') || limit === shortLimit(rpm.value, '10s'))
      ) {
        this.burst.period = limit === shortLimit(rpm.value, '1s') ? '1s' : '10s';
        this.gating = undefined;
        forget(this.hot);
      }
    }
    if (this.burst.claims(reported)) this.burst.anchor(reported, context);
  }

  /**
   * An upstream 429 said its request limit was hit (`requestLimitHit`) and asked to wait
   * `retryMs`: where our count of the 10 s window had room for the call it refused and the
   * upstream has room again within a second, it counts requests over 1 s, and so does this model
   * from now on (unless `requestWindow` is configured). Asked before the 429's headers are read,
   * as they correct the count it weighs.
   */
  requestsRefused(retryMs: number | undefined, now = this.clock()): void {
    if (this.requestWindowSet || this.upstream !== 'azure' || this.burst.period === '1s') return;
    if (retryMs === undefined || retryMs > 1_000) return;
    // A 10 s window we count as full (the refused call is in it) explains the refusal.
    if (this.burst.active && this.burst.used(now) > this.burst.limit) return;
    const rpm = this.limits.rpm;
    this.burst.period = '1s';
    // A learned rpm is six times the header's limit, which speaks of the 1 s window now.
    if (rpm.configured === undefined && rpm.value > 0) this.scope.learned(rpm, rpm.value * 10, now);
    this.gating = undefined;
    forget(this.hot);
  }

  /**
   * The last answer to this instance's own calls, as other instances can anchor on it (see
   * {@link replay}); `undefined` before any answer had rate-limit headers.
   */
  lastReading(): SharedReading | undefined {
    const own = this.answers.last;
    if (own === undefined) return undefined;
    return { ...own, tokensEnd: this.tokens.end.act, requestsEnd: this.requests.end.act };
  }

  /**
   * Anchor on another instance's answer from this deployment, as on one of ours, when it is newer
   * than every answer anchored on and the shared view says when the others' usage was sent (the
   * upstream's count at that moment then holds what was sent before it, and the shared view adds
   * what was sent after). The parts of a reading whose window has ended since are left out, and
   * its limits are not learned (a peer's word never sets a limit). Returns true when it was
   * anchored on.
   */
  replay(reading: SharedReading): boolean {
    if (this.scope.peers?.spans === undefined || !this.answers.isNewer(reading.sentAt))
      return false;
    const now = this.clock();
    this.catchUp(now);
    const live = liveParts(reading, now, this.tokens.rolledAt, this.requests.rolledAt);
    if (live === undefined) return false;
    reading = live;
    const context = this.answers.peerAnswer(reading, now);
    if (context === undefined) return false;
    forget(this.hot);
    this.apply(reading.reading, context);
    return true;
  }

  /** Charge (or refund, negative) outside a call's admission; usage never goes below 0. */
  spend(tokens: number, requests = 0): void {
    forget(this.hot);
    const now = this.clock();
    if (tokens !== 0) this.tokens.window.add(tokens, now);
    if (requests !== 0) this.requests.window.add(requests, now);
  }

  /** Forget usage counted in the current window, and the corrections with it. */
  reset(): void {
    forget(this.hot);
    for (const counter of this.counters) counter.reset();
  }
}

import { DEFAULT_SPAN, LedgerReadout } from './ledger-readout';
import { tokensOf, type Admission, type TokenUsage } from './admission';
import { AnswerLog } from './answer-log';
import { counterScope, fits, gatingOf, type LimitCounter } from './limit-counter';
import { CallSize } from './call-size';
import { ChargedCounters } from './charged-counters';
import type { LedgerConfig, QuotaLedgerOptions } from './ledger-options';
import type { LevelCounter, PoolLevel } from './pool-level';
import { Pricing } from './pricing';
import { limitsOf, type LimitName } from './quota-limit';
import { readRateLimits, type HeaderSource, type RateLimitFamily } from './rate-limit-headers';
import { liveParts, type SharedReading } from './reading';
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
import type { LearnedRule } from './rules/quota-rules';
import { rulesFor } from './rules/rules-for';

export { DEFAULT_OUTPUT_RESERVATION } from './rules/rules-for';
export type { QuotaLedgerOptions } from './ledger-options';

/**
 * The quota accounting of one model on one deployment: the counters its upstream's rules built
 * (`src/quota/rules/`: one per limit, and the requests of a shorter interval), each with its usage,
 * its correction from the rate-limit headers, its window roll and the peers' usage. The ledger
 * loops over them: a call has room when every counter fits its charge as the rules price it
 * ({@link hasRoom}), `util` is the largest share, {@link roomAt} the longest wait, and an answer's
 * reading is handed by the rules to the counter of each limit ({@link observe}). Cooldowns are its
 * owner's business.
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
export class QuotaLedger extends LedgerReadout {
  /** Whose headers it reads (`undefined`: both, a ledger built without rules). */
  readonly family: RateLimitFamily | undefined;
  /** Whether the request window was configured: then no answer changes it. */
  readonly requestWindowSet: boolean;
  /** Every counter a charge reaches, in order. */
  private readonly charged: ChargedCounters;
  /** Limits a shared store adds (its leases, and its pool levels'), asked after the ledger's own (see {@link gate}). */
  private gates: readonly LimitCounter[];
  /** The limits a single call can be too big for, and the probes they owe. */
  private readonly size: CallSize;
  /** @internal The levels of its pool's path (`quotaPools`), which other ledgers charge too. */
  readonly levels: readonly PoolLevel[];
  private readonly levelGates: readonly LevelCounter[];
  private readonly answers: AnswerLog;
  private readonly pricing: Pricing;
  private readonly onRule: ((rule: LearnedRule) => void) | undefined;

  constructor(
    config: LedgerConfig,
    clock: () => number = Date.now,
    options: QuotaLedgerOptions = {},
    /** Where it keeps what a draw reads: a row of its registry's table, else one of its own. */
    hot: HotRow = hotRow(),
  ) {
    const explicit = options.rules ?? (options.upstream && rulesFor(options.upstream));
    const rules = explicit ?? rulesFor('azure', config.provisioned === true);
    const limits = limitsOf(config);
    // The scope tells the ledger a limit changed, once there is a ledger to tell.
    const stale = { changed: () => {} };
    const scope = counterScope(DEFAULT_SPAN, options.onLimit, () => stale.changed());
    const counters = rules.counters({
      limits,
      clock,
      scope,
      outputWeight: config.outputWeight,
      ramp: config.rampUp !== false,
    });
    super({ limits, rules, counters, scope, hot, clock });
    stale.changed = () => this.changed();
    this.family = explicit === undefined ? undefined : rules.family;
    this.answers = new AnswerLog(
      explicit === undefined
        ? (headers, withLimits, into) => readRateLimits(headers, withLimits, undefined, false, into)
        : (headers, withLimits, into) => rules.read(headers, withLimits, into),
      scope,
    );
    this.onRule = options.onRule;
    this.requestWindowSet = config.requestWindow !== undefined;
    if (config.requestWindow !== undefined) counters.burst.period = config.requestWindow;
    this.pricing = new Pricing(rules, config, counters, limits.otpm);
    const { tokens, requests, burst, input, output, utilization } = counters;
    this.levels = options.levels ?? [];
    for (const level of this.levels) level.join(counters, scope, (gates) => this.gate(gates));
    this.levelGates = this.levels.flatMap((level) => level.gates);
    this.charged = new ChargedCounters(
      [utilization ?? tokens, requests, burst, input, output],
      this.levelGates,
    );
    this.gates = [];
    // A provisioned deployment admits a call of any size below 100 %: none is too big for it.
    this.size = new CallSize(
      utilization ? [input, output] : [tokens, input, output],
      this.levelGates,
      scope,
    );
  }

  /** The counters with a limit in force, the utilization in the tokens' place on a PTU. */
  private gatingCounters(): readonly LimitCounter[] {
    const { tokens, requests, burst, input, output, utilization } = this.counters;
    return (this.gating ??= gatingOf({
      tokens: utilization ?? tokens,
      requests,
      burst,
      input,
      output,
    }).concat(this.levelGates, this.gates));
  }

  /**
   * @internal Add limits of a shared store's making (a replica's leases of the ledger's own
   * limits, and of each level of its pool path): they gate every admission as the ledger's own
   * limits do, and hear of every charge. Each call adds to those given before.
   */
  gate(counters: readonly LimitCounter[]): void {
    const added = counters.filter((c) => !this.gates.includes(c));
    this.charged.add(added);
    this.gates = this.gates.concat(added);
    this.changed();
  }

  /** The largest share of any limit over the anchored view; unlimited counts as 0. */
  util(now = this.clock()): number {
    const kept = keptUtil(this.hot, now);
    if (kept >= 0) return kept;
    this.catchUp(now);
    // Others' usage (a store updates it in place) changes with time: it is not kept.
    // A combined limit charges the expected output, which its room in the row cannot say.
    const expected = this.counters.expected;
    // A level's count moves with the other members' calls too.
    const keeps =
      this.scope.peers === undefined &&
      this.levelGates.length === 0 &&
      (expected === undefined || !(this.limits.tpm.value > 0));
    // What an uncapped call is charged here, for a draw that reads the row alone.
    this.hot.table[this.hot.row + RESERVE] = expected === undefined ? this.pricing.reservation : -1;
    return measure(this.hot, this.gatingCounters(), now, keeps);
  }

  /** Output tokens charged now for each output of a call that sets no cap. */
  get outputReservation(): number {
    return this.pricing.reservation;
  }

  /** True when a call with this admission charge fits every limit at `now`, by the anchored view. */
  hasRoom(admission: Admission, now = this.clock()): boolean {
    return this.hasRoomPriced(this.pricing.priced(admission, now), now);
  }

  /** {@link hasRoom} of a charge already priced here. */
  private hasRoomPriced(admission: Admission, now: number): boolean {
    // One pass keeps the utilization and each limit's room (a draw weighs the load next); while
    // they hold, room is read from there (a learned limit may owe a probe: asked below).
    const alone = this.scope.peers === undefined && this.levelGates.length === 0;
    if (alone && (admission.reserve ?? 0) <= 0) {
      this.util(now);
      if (keptUtil(this.hot, now) >= 0) {
        const room = fitsRoom(this.hot.table, this.hot.row, admission);
        if (room || !this.size.anyLearned()) return room;
      }
    }
    this.catchUp(now);
    for (const counter of this.gatingCounters()) {
      if (!fits(counter, admission, now) && this.size.probe(counter, admission, now) === undefined)
        return false;
    }
    return true;
  }

  /**
   * ms from `now` until a call with this admission charge has room (0 when it has room now);
   * `Infinity` when it never will (see {@link exceeds}). An upper bound: corrections fade sooner.
   */
  roomAt(admission: Admission, now = this.clock()): number {
    admission = this.pricing.priced(admission, now);
    if (this.size.tooBig(admission, now) !== undefined) return Infinity;
    if (this.hasRoomPriced(admission, now)) return 0;
    let wait = 0;
    for (const counter of this.charged.all) {
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
   * limit itself, and no probe is owed), or `undefined` when it fits an empty window.
   */
  exceeds(
    admission: Admission,
    now = this.clock(),
  ): { limit: LimitName; value: number; charge: number } | undefined {
    return this.size.tooBig(this.pricing.priced(admission, now), now);
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
    const priced = this.pricing.priced(admission, now);
    if (priced !== admission) {
      if (admission.askedInput === undefined) {
        admission.askedInput = admission.input;
        admission.askedOutput = admission.output;
      }
      admission.input = priced.input;
      admission.output = priced.output;
    }
    forget(this.hot);
    this.size.probed(admission, now);
    this.charged.admit(admission, now);
    this.answers.admitted(admission, now);
    return now;
  }

  /** No longer in flight. True when its own answer's headers were anchored on. */
  private answered(admission: Admission): boolean {
    forget(this.hot);
    this.charged.answered(admission);
    return this.answers.answered(admission);
  }

  /**
   * The answer to an admitted call reports what it used: reconcile as the upstream does. Once per
   * admission, `usage` undefined when the answer did not say (the admission charge stays); `now`
   * the clock's reading, when the caller has one. Returns the tokens charged (negative: refunded).
   */
  settle(admission: Admission, usage: TokenUsage | undefined, now?: number): number {
    this.answered(admission);
    if ('confirmed' in this.burst) this.burst.confirmed();
    if (usage === undefined) return 0;
    const change = this.pricing.reconcile(admission, usage);
    now ??= this.clock();
    this.pricing.learn(admission, usage, now);
    const { input, output } = change;
    if (input === 0 && output === 0) return 0;
    this.charged.settle(input, output, now);
    return tokensOf(change);
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
    this.charged.settle(-admission.input, -admission.output, now);
    return -tokens;
  }

  /**
   * Anchor on an answer's rate-limit headers: the rules hand each value to its limit's counter,
   * which learns the limit and corrects its view by the upstream's count. `own` is the admission
   * of the call this answer is for, while it is still in flight, and `sentAt` when it was
   * admitted (what {@link admit} returned).
   */
  observe(headers: HeaderSource, own?: Admission, sentAt?: number): void {
    const { tpm, rpm, itpm, otpm } = this.limits;
    const doubt = tpm.doubtful || rpm.doubtful || itpm.doubtful || otpm.doubtful;
    const reading = this.answers.read(headers, doubt);
    if (reading === undefined) return;
    forget(this.hot);
    const now = this.clock();
    this.catchUp(now);
    if (own?.uncapped !== undefined) {
      this.reprice(this.pricing.learnReservation(reading, own, this.counted(now)), now);
    }
    // Azure OpenAI's reset headers are read only where a counter needs them.
    const readable = this.family !== 'anthropic' ? headers : undefined;
    const context = this.answers.ownAnswer(reading, own, sentAt, now, readable);
    this.rules.apply(reading, context, this);
  }

  /**
   * @internal An uncapped call was refused for tokens (its charge is back): what the refusal's
   * `headers` say the upstream reserves beyond our charge, it reserves from now on.
   */
  uncappedRefused(refused: Admission, headers: HeaderSource, now = this.clock()): void {
    const reading = this.answers.peek(headers);
    if (reading === undefined) return;
    const { uncapped } = this.answers;
    // A refusal's reading is no anchor for the calls in flight: our own count is compared.
    const counted = this.tokens.counted(now);
    this.reprice(this.pricing.learnFromRefusal(reading, refused, counted, uncapped), now);
  }

  /** `charge` more output tokens for calls in flight, whose reservation was learned. */
  private reprice(charge: number, now: number): void {
    if (charge === 0) return;
    forget(this.hot);
    this.charged.settle(0, charge, now);
    this.tokens.inFlight += charge;
  }

  /** Our count of the tokens at `now`, with its correction. */
  private counted(now: number): number {
    return this.tokens.counted(now) + this.tokens.correction.at(now, this.scope.span);
  }

  /**
   * An upstream 429 said its request limit was hit (`requestLimitHit`) and asked to wait
   * `retryMs`: where our count had room for the call it refused, the upstream enforces requests
   * over a shorter interval, and so does this model from now on (unless `requestWindow` is
   * configured): its rules say which, and the owner is told once. Asked before the 429's headers
   * are read, as they correct the count it weighs.
   */
  requestsRefused(retryMs: number | undefined, now = this.clock()): void {
    const rule = this.rules.refused(this, retryMs, now);
    if (rule !== undefined) this.onRule?.(rule);
  }

  /**
   * The last answer to this instance's own calls, as other instances can anchor on it. Its
   * `reading` is the ledger's own, written over by the next answer: read it at once.
   */
  lastReading(): SharedReading | undefined {
    const own = this.answers.last;
    if (own === undefined) return undefined;
    return { ...own, tokensEnd: this.tokens.end.act, requestsEnd: this.requests.end.act };
  }

  /**
   * Anchor on another instance's answer from this deployment, as on one of ours, when it is newer
   * than every answer anchored on and the shared view says when the others' usage was sent. The
   * parts whose window has ended since are left out, and its limits are not learned (a peer's
   * word never sets a limit). Returns true when it was anchored on.
   */
  replay(reading: SharedReading): boolean {
    if (this.scope.peers?.spans === undefined || !this.answers.isNewer(reading.sentAt))
      return false;
    const now = this.clock();
    this.catchUp(now);
    const live = liveParts(reading, now, this.tokens.rolledAt, this.requests.rolledAt);
    const context = live && this.answers.peerAnswer(live, now);
    if (context === undefined) return false;
    forget(this.hot);
    this.rules.apply(live!.reading, context, this);
    return true;
  }

  /** Counts usage over a sliding window (see `LedgerReadout.slide`), and so do its pool's levels. */
  override slide(windowMs: number, buckets = 120): void {
    super.slide(windowMs, buckets);
    for (const level of this.levels) level.slide(windowMs, buckets);
  }

  /** Forget usage counted in the current window, and the corrections with it. */
  reset(): void {
    forget(this.hot);
    for (const counter of this.charged.all) counter.reset();
  }
}

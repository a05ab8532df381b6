import {
  ownInput,
  ownOutput,
  reconcile,
  tokensOf,
  type Admission,
  type TokenUsage,
} from './admission';
import { CachedPrefixes } from './cached-prefixes';
import type { QuotaLimit } from './quota-limit';
import type { RateLimitReading } from './rate-limit-headers';
import type { LedgerCounters, QuotaRules } from './rules/quota-rules';

/**
 * What a call is charged on one deployment, by its rules: its own admission, except that a call
 * without an output cap is charged the upstream's reservation for each of its outputs, a Claude
 * call the output expected of it (at most its cap and the limit), and a call over a prefix known
 * cached there its input less that prefix where cached input is free (Claude, a PTU; unless cache
 * reads count toward `itpm`); a PTU weighs output. It learns the reservation, the output
 * expected and the cached prefixes from the answers.
 *
 * @example
 * ```ts
 * const pricing = new Pricing(ANTHROPIC, {}, counters, limits.otpm);
 * pricing.priced({ input: 900, output: 4_096 }, now); // output: the p90 of recent answers
 * ```
 */
export class Pricing {
  /** Output tokens the upstream reserves for each output of a call without a cap. */
  reservation: number;
  /** Whether {@link reservation} was configured: then no answer changes it. */
  private readonly reservationSet: boolean;
  /** Whether cache reads count toward `itpm` (the old rule, for models that keep it). */
  readonly cacheReadsCountInput: boolean;
  /** The prompt prefixes cached on this deployment for this model, from its answers. */
  readonly cached = new CachedPrefixes();
  /** A call's charge as priced here, rewritten by each {@link priced} (see there). */
  private readonly quote: Admission = { input: 0, output: 0, reserve: undefined };
  /** What an answer changes in a call's charge, rewritten by each {@link reconcile}. */
  private readonly change = { input: 0, output: 0 };

  constructor(
    private readonly rules: QuotaRules,
    config: { outputReservation?: number; cacheReadsCountInput?: boolean },
    private readonly counters: LedgerCounters,
    private readonly otpm: QuotaLimit,
  ) {
    this.reservationSet = config.outputReservation !== undefined;
    this.reservation = config.outputReservation ?? rules.reservation;
    this.cacheReadsCountInput = config.cacheReadsCountInput === true;
  }

  /** True when a call's charge here is always its own admission (nothing to price). */
  private plain(admission: Admission): boolean {
    return (
      admission.askedInput === undefined &&
      admission.uncapped === undefined &&
      admission.cachePrefix === undefined &&
      this.counters.expected === undefined &&
      this.counters.utilization === undefined
    );
  }

  /**
   * `admission` as charged here at `now`. The result is read by the counters and let go before
   * the call that priced it returns: one object, rewritten, rather than a copy per candidate of
   * every draw.
   */
  priced(admission: Admission, now: number): Admission {
    if (this.plain(admission)) return admission;
    const { expected, utilization } = this.counters;
    let input = ownInput(admission);
    let output = ownOutput(admission);
    if (admission.uncapped !== undefined) output = this.reservation * admission.uncapped;
    if (expected !== undefined) {
      output = expected.of(output);
      const otpm = this.otpm.value;
      if (otpm > 0 && output > otpm) output = otpm;
    }
    const prefix = admission.cachePrefix;
    if (prefix !== undefined && !this.cacheReadsCountInput && this.rules.cachedInputFree) {
      input = Math.max(0, input - this.cached.tokensOf(prefix, now));
    }
    if (utilization !== undefined) output = utilization.weigh(output);
    const quote = this.quote;
    quote.input = input;
    quote.output = output;
    quote.reserve = admission.reserve;
    return quote;
  }

  /**
   * What an answer's usage changes in a call's charge, as the upstream reconciles it: this
   * pricing's one change, written again for each answer (read it at once).
   */
  reconcile(admission: Admission, usage: TokenUsage): { input: number; output: number } {
    return (
      this.counters.utilization?.reconcile(admission, usage) ??
      reconcile(this.rules.policy, admission, usage, this.cacheReadsCountInput, this.change)
    );
  }

  /**
   * What an answer teaches of the next calls: the output it produced, and that its prompt prefix
   * is cached here (read or written, it lives five minutes from now).
   */
  learn(admission: Admission, usage: TokenUsage, now: number): void {
    if (this.counters.expected === undefined && admission.cachePrefix === undefined) return;
    this.counters.expected?.answered(usage.output);
    const prefix = admission.cachePrefix;
    const tokens = (usage.cacheRead ?? 0) || (usage.cacheWrite ?? 0);
    if (prefix !== undefined && tokens > 0) this.cached.used(prefix, tokens, now);
  }

  /**
   * An uncapped call's own answer, read while no other call of ours was on its way (`counted`:
   * our count of the tokens, with its correction): how far the upstream's remaining tokens
   * dropped beyond it is what the upstream reserved for the call's output beyond what we
   * charged. The reservation becomes what it reserved (unless configured); returns the change in
   * the call's charge, for the counters (0: none).
   */
  learnReservation(reading: RateLimitReading, own: Admission, counted: number): number {
    const reported = reading.tokens;
    const tpm = this.counters.tokens.limit.value;
    const n = own.uncapped!;
    if (this.reservationSet || reported?.remaining === undefined || !(tpm > 0)) return 0;
    if (this.counters.tokens.inFlight !== tokensOf(own)) return 0;
    const more = tpm - reported.remaining - counted;
    const reservation = Math.round(own.output / n + more / n);
    if (!(reservation >= 0) || reservation === this.reservation) return 0;
    this.reservation = reservation;
    const charge = reservation * n - own.output;
    own.output += charge;
    return charge;
  }

  /**
   * An uncapped call the upstream refused for tokens (its charge already given back; `counted`:
   * our own count): what the upstream counts beyond our count is what it reserved beyond our
   * charge for the uncapped calls still in flight (`inFlight`), if anything: a refusal whose
   * count agrees with ours (another cause, a fault) teaches nothing. The reservation rises by that
   * share (unless configured; never so far that a call of this prompt could not fit the limit),
   * for the calls sent from now on (a queue's again), and those in flight are charged it too:
   * each refusal that follows, its charge gone from our count and not from the upstream's, tells
   * the rest. What others sent counts as ours here, on the safe side; a call's own answer read
   * alone sets the reservation again ({@link learnReservation}). Returns the output tokens added
   * to the calls in flight.
   */
  learnFromRefusal(
    reading: RateLimitReading,
    refused: Admission,
    counted: number,
    inFlight: readonly Admission[],
  ): number {
    const remaining = reading.tokens?.remaining;
    const tpm = this.counters.tokens.limit.value;
    if (this.reservationSet || remaining === undefined || !(tpm > 0)) return 0;
    let outputs = 0;
    for (const call of inFlight) outputs += call.uncapped!;
    const more = tpm - remaining - counted;
    if (!(more > 0) || outputs === 0) return 0;
    const learned = Math.min(this.reservation + Math.ceil(more / outputs), tpm - refused.input - 1);
    if (!(learned > this.reservation)) return 0;
    const rise = learned - this.reservation;
    this.reservation = learned;
    for (const call of inFlight) call.output += rise * call.uncapped!;
    return rise * outputs;
  }
}

import { roomLeft, type Admission, type TokenUsage } from './admission';
import type { LimitCounter } from './limit-counter';
import type { QuotaLimit } from './quota-limit';
import type { TokensCounter } from './tokens-counter';

/**
 * The utilization of an Azure OpenAI provisioned (PTU) deployment, as "What is provisioned
 * throughput?" describes it: a leaky bucket that each call fills by its charge (uncached prompt
 * plus output times the model's `outputWeight`) and that drains continuously at the deployment's
 * capacity (`tpm` input-equivalent tokens a minute). The upstream admits a call while utilization
 * is below 100 %, whatever the call's size: so does this counter, where a tokens limit would ask
 * that the whole charge fit.
 *
 * It keeps no count of its own: the tokens counter charges, settles and releases the calls (in a
 * `DrainCount` draining at `tpm`), and this counter answers the questions of admission over it.
 *
 * @example
 * ```ts
 * const utilization = new UtilizationCounter(tokens, 4);
 * fits(utilization, { input: 1_200, output: 4 * 256 }, now); // true while below 100 %
 * ```
 */
export class UtilizationCounter implements LimitCounter {
  /** It counts the tokens (weighted) of the tokens counter. */
  readonly unit = 'tokens';

  constructor(
    /** The tokens counter whose drained count is the utilization (its limit: the capacity). */
    readonly tokens: TokensCounter,
    /** Input tokens one output token counts for (gpt-4.1: 4). */
    readonly outputWeight: number,
  ) {}

  /** The capacity, in input-equivalent tokens a minute. */
  get limit(): QuotaLimit {
    return this.tokens.limit;
  }

  charge(admission: Admission): number {
    return this.tokens.charge(admission);
  }

  /**
   * Any charge fits below 100 % (of what a call's `reserve` leaves), none at or above it: room
   * is `Infinity` or `-Infinity`.
   */
  room(now: number, admission?: Admission): number {
    return roomLeft(this.limit.value, this.tokens.used(now), admission) > 0 ? Infinity : -Infinity;
  }

  share(now: number): number {
    return this.tokens.share(now);
  }

  changesAt(now: number): number {
    return this.tokens.changesAt(now);
  }

  /** ms until utilization is below what the call may fill, as it drains at the capacity. */
  wait(admission: Admission, now: number): number {
    const value = this.limit.value;
    if (value <= 0) return 0;
    // One token below the line: admitted means strictly below it.
    const over = 1 - roomLeft(value, this.tokens.used(now), admission);
    return over > 0 ? (over * 60_000) / value : 0;
  }

  admit(admission: Admission, now: number): void {
    this.tokens.admit(admission, now);
  }

  answered(admission: Admission): void {
    this.tokens.answered(admission);
  }

  settle(input: number, output: number, now: number): void {
    this.tokens.settle(input, output, now);
  }

  catchUp(now: number): void {
    this.tokens.catchUp(now);
  }

  reset(): void {
    this.tokens.reset();
  }

  /**
   * What a call is charged here: its output counts {@link outputWeight} input tokens each (its
   * input is charged as it is; a prefix known cached is taken off before).
   */
  weigh(output: number): number {
    return output * this.outputWeight;
  }

  /**
   * What an answer changes in the charge of an admitted call: its input becomes the prompt less
   * the cached tokens (free), its output the actual output times the weight (unused output goes
   * back when the call ends). Returns the input and output tokens to add (negative: to give back).
   *
   * @example
   * ```ts
   * utilization.reconcile({ input: 5_000, output: 4 * 500 }, { input: 5_000, output: 80, cacheRead: 4_096 });
   * // { input: -4_096, output: -1_680 }
   * ```
   */
  reconcile(admission: Admission, usage: TokenUsage): { input: number; output: number } {
    const uncached = Math.max(0, usage.input - (usage.cacheRead ?? 0));
    return {
      input: uncached - admission.input,
      output: usage.output * this.outputWeight - admission.output,
    };
  }
}

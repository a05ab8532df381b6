/**
 * Output tokens a call is expected to produce before it has: Anthropic counts output tokens per
 * minute on what answers produce, `max_tokens` does not factor in. Until an answer came, a call
 * is expected to produce {@link START_OUTPUT_ESTIMATE} tokens; then the 90th percentile of the
 * last {@link RECENT_OUTPUTS} answers of that model on that deployment. Always at most the call's
 * own cap.
 */

/** Output tokens expected of a call before any answer of its model on its deployment: a long chat answer. */
export const START_OUTPUT_ESTIMATE = 512;
/** How many recent answers the estimate reads. */
export const RECENT_OUTPUTS = 20;

/**
 * The output expected of the next call of one model on one deployment, from its recent answers.
 *
 * @example
 * ```ts
 * const estimate = new OutputEstimate();
 * estimate.answered(97);
 * estimate.of(4_096); // 97: the answers so far, never above the call's cap
 * ```
 */
export class OutputEstimate {
  private readonly recent: number[] = [];
  /** {@link recent} in order, rewritten per answer (no copy made per answer). */
  private readonly sorted: number[] = [];
  private next = 0;
  /** The 90th percentile of {@link recent}, recomputed per answer (read per call). */
  private p90 = START_OUTPUT_ESTIMATE;

  /** Output expected of a call capped at `cap` tokens. */
  of(cap: number): number {
    return cap < this.p90 ? cap : this.p90;
  }

  /** An answer produced `output` tokens. */
  answered(output: number): void {
    if (!(output >= 0)) return;
    if (this.recent.length < RECENT_OUTPUTS) this.recent.push(output);
    else this.recent[this.next] = output;
    this.next = (this.next + 1) % RECENT_OUTPUTS;
    // Insertion into a copy of at most RECENT_OUTPUTS numbers, already nearly in order.
    const sorted = this.sorted;
    const count = this.recent.length;
    for (let i = 0; i < count; i++) {
      const value = this.recent[i]!;
      let j = i;
      while (j > 0 && sorted[j - 1]! > value) {
        sorted[j] = sorted[j - 1]!;
        j--;
      }
      sorted[j] = value;
    }
    this.p90 = sorted[Math.min(count - 1, Math.floor(count * 0.9))]!;
  }

  reset(): void {
    this.recent.length = 0;
    this.sorted.length = 0;
    this.next = 0;
    this.p90 = START_OUTPUT_ESTIMATE;
  }
}

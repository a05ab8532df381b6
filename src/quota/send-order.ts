import type { Admission, SentMarks } from './admission';

/**
 * The order calls were sent in, as one counter charged them. An answer's rate-limit headers
 * speak of the upstream's count when it admitted that call, which holds every call sent before it
 * (they arrived first) and none sent after: answers come back in any order (0.5-8 s apart for LLM
 * calls), so what arrived before an answer says nothing of what the upstream had counted. The
 * calls sent after the answered one are what our count holds and the upstream's did not.
 *
 * Calls sent together reach the upstream in any order, so the matching by send order is taken
 * as far as the one by arrival (our count less the calls in flight) agrees with it ({@link agreed}).
 *
 * Only admission charges are summed: a later call's refund or settlement leaves its charge here,
 * so the upstream then looks to count a little more than it does, never less.
 *
 * @example
 * ```ts
 * order.sent(admission, 1_000);                   // at admission
 * const unseen = order.after(admission, 1_000);   // when its answer is read
 * ```
 */
export class SendOrder {
  /** Everything this counter charged at admission, ever. */
  private total = 0;

  constructor(private readonly column: keyof SentMarks) {}

  /** `admission` is sent now, charging `charge`: mark where it stands. */
  sent(admission: Admission, charge: number): void {
    const marks = (admission.sent ??= { tokens: 0, requests: 0, input: 0, output: 0 });
    marks[this.column] = this.total;
    this.total += charge;
  }

  /**
   * What was charged after `admission` (which charged `charge`) was sent, or `undefined` when
   * this counter did not send it.
   */
  after(admission: Admission, charge: number): number | undefined {
    const marks = admission.sent;
    if (marks === undefined) return undefined;
    const after = this.total - marks[this.column] - charge;
    return after >= 0 && after <= this.total ? after : undefined;
  }

  reset(): void {
    this.total = 0;
  }
}

/**
 * The correction two matchings of one answer agree on: `bySend` compares the upstream's count
 * with what was sent before the call, `byArrival` with our count less the calls still in flight.
 * Calls sent together reach the upstream in any order, so neither alone is sure: where both say
 * the upstream counts more (or less), the smaller difference is taken; where they disagree, none.
 *
 * @example
 * ```ts
 * agreed(-18, -1); // -1
 * agreed(-3, 2); // 0
 * ```
 */
export function agreed(bySend: number, byArrival: number): number {
  if (bySend > 0 && byArrival > 0) return bySend < byArrival ? bySend : byArrival;
  if (bySend < 0 && byArrival < 0) return bySend > byArrival ? bySend : byArrival;
  return 0;
}

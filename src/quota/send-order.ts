import type { Admission, ChargeUnit } from './admission';

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

  constructor(private readonly column: ChargeUnit) {}

  /** `admission` is sent now, charging `charge`: mark where it stands. */
  sent(admission: Admission, charge: number): void {
    const total = this.total;
    // One store per unit, each of one field: a key that changes with the counter would make the
    // store generic.
    switch (this.column) {
      case 'tokens':
        admission.sentTokens = total;
        break;
      case 'requests':
        admission.sentRequests = total;
        break;
      case 'input':
        admission.sentInput = total;
        break;
      case 'output':
        admission.sentOutput = total;
        break;
    }
    this.total = total + charge;
  }

  /**
   * What was charged after `admission` (which charged `charge`) was sent, or `undefined` when
   * no counter of this one's unit sent it.
   */
  after(admission: Admission, charge: number): number | undefined {
    const mark = markOf(admission, this.column);
    if (mark === undefined) return undefined;
    const after = this.total - mark - charge;
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

/** Where `admission` stood in `unit` when it was sent (see {@link SendOrder.sent}). */
function markOf(admission: Admission, unit: ChargeUnit): number | undefined {
  switch (unit) {
    case 'tokens':
      return admission.sentTokens;
    case 'requests':
      return admission.sentRequests;
    case 'input':
      return admission.sentInput;
    case 'output':
      return admission.sentOutput;
  }
}

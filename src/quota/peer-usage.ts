/**
 * The other switchboard instances' usage of one model on one deployment (peers' usage: shared
 * state stores fill it in, a ledger reads it as its `shared` view).
 *
 * @example
 * ```ts
 * // 4 000 tokens and 12 requests sent by the others in the second that starts at t0
 * ledger.shared = { tokens: 4_000, requests: 12, spans: [t0, t0 + 1000, 4_000, 12] };
 * ```
 */
export interface PeerUsage {
  tokens: number;
  requests: number;
  /** Requests in the newest sixth of the window, weighed against `rpm / 6` as the own ones are. */
  recentRequests?: number;
  /**
   * The same usage by when it was sent, when the store knows it:
   * `[start, end, tokens, requests, ...]` (epoch ms), one quadruple per span of send times, oldest
   * first; a store replaces the array when the usage changes (never edits it in place). With it, the others' usage the upstream's
   * own count already holds (sent before the answer the ledger last anchored on was written) or
   * has forgotten (sent before its window last ended) is left out: `tokens` and `requests` are
   * then only the totals, for operators.
   */
  spans?: readonly number[];
}

/** Where a column sits in a quadruple of {@link PeerUsage.spans}: 2 tokens, 3 requests. */
export type SpanColumn = 2 | 3;

/**
 * The others' usage in one column counted from a send time on, cached until the spans or the
 * send time change (a store replaces the array when the usage changes).
 *
 * @example
 * ```ts
 * const others = new PeerSum(2);
 * others.since(shared.spans!, anchoredAt); // tokens the others sent from then on
 * ```
 */
export class PeerSum {
  private spans: readonly number[] | undefined;
  private from = 0;
  private sum = 0;

  constructor(private readonly column: SpanColumn) {}

  /**
   * The sum of the column sent from `from` on. A span that `from` falls inside counts in
   * proportion to the part of it after `from`: its usage is taken as spread over it.
   */
  since(spans: readonly number[], from: number): number {
    if (this.spans === spans && this.from === from) return this.sum;
    const at = this.column;
    let sum = 0;
    for (let i = 0; i + 3 < spans.length; i += 4) {
      const start = spans[i]!;
      const end = spans[i + 1]!;
      if (end <= from) continue;
      const v = spans[i + at]!;
      sum += start >= from || end <= start ? v : (v * (end - from)) / (end - start);
    }
    this.spans = spans;
    this.from = from;
    this.sum = sum;
    return sum;
  }
}

/**
 * The part of one call of `amount` sent at `t` by another instance that `spans` counts as sent
 * after `t`: the span `t` falls in counts in proportion to its part after `t`.
 *
 * @example
 * ```ts
 * sentAfter([t0, t0 + 1000, 400, 1], t0 + 500, 400, 2); // 200
 * ```
 */
export function sentAfter(
  spans: readonly number[],
  t: number,
  amount: number,
  column: SpanColumn,
): number {
  if (amount <= 0) return 0;
  for (let i = spans.length - 4; i >= 0; i -= 4) {
    const start = spans[i]!;
    const end = spans[i + 1]!;
    if (end <= t) break;
    if (start <= t && end > start) {
      return (Math.min(amount, spans[i + column]!) * (end - t)) / (end - start);
    }
  }
  return 0;
}

/**
 * The requests of `spans` sent from `from` on, newest spans first (the newest sixth of a window
 * is a few spans at the end); the span `from` falls inside counts in proportion.
 *
 * @example
 * ```ts
 * recentRequests(shared.sent!.spans, now - 10_000);
 * ```
 */
export function recentRequests(spans: readonly number[], from: number): number {
  let sum = 0;
  for (let i = spans.length - 4; i >= 0; i -= 4) {
    const start = spans[i]!;
    const end = spans[i + 1]!;
    if (end <= from) break;
    const v = spans[i + 3]!;
    sum += start >= from || end <= start ? v : (v * (end - from)) / (end - start);
  }
  return sum;
}

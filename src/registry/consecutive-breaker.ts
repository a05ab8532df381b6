/**
 * Counts consecutive failures: a success resets the count, and the breaker is open once the
 * count reaches its threshold (cockatiel's `ConsecutiveBreaker`, without the timers: the owner's
 * cooldown does the waiting).
 *
 * @example
 * ```ts
 * const breaker = new ConsecutiveBreaker(3);
 * breaker.failure(); // false
 * breaker.failure(); // false
 * breaker.failure(); // true: open
 * breaker.success(); // closed again, count 0
 * ```
 */
export class ConsecutiveBreaker {
  private count = 0;

  constructor(
    /** Failures in a row that open the breaker. */
    readonly threshold = 3,
  ) {}

  /** Failures since the last success. */
  get failures(): number {
    return this.count;
  }

  /** Count a failure; returns true when the breaker is (now) open. */
  failure(): boolean {
    return ++this.count >= this.threshold;
  }

  /** A success ends a run of failures. */
  success(): void {
    if (this.count !== 0) this.count = 0;
  }
}

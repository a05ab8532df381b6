/** Length of a minute bucket (ms). */
export const BUCKET_MS = 1_000;
/** Buckets a minute's window holds: the current one and the 60 before it. */
export const WINDOW_BUCKETS = 61;

/**
 * A minute's counts in one-second buckets: a ring of the {@link WINDOW_BUCKETS} newest, with their
 * sum kept as they come and go. Reading the window, adding to it and letting old buckets go cost
 * the same however many buckets hold something, and allocate nothing.
 *
 * @example
 * ```ts
 * const tokens = new MinuteBuckets();
 * tokens.slide(1_000); // 0: what the window ending at bucket 1 000 holds
 * tokens.add(1_000, 500);
 * tokens.slide(1_060); // 500
 * tokens.slide(1_061); // 0: bucket 1 000 left the window
 * ```
 */
export class MinuteBuckets {
  private readonly counts = new Float64Array(WINDOW_BUCKETS);
  /** The newest bucket the window reaches (a bucket number: epoch ms / {@link BUCKET_MS}). */
  private newest = -WINDOW_BUCKETS;
  private sum = 0;

  /** Moves the window up to `bucket`, letting go of the buckets that leave it; returns its sum. */
  slide(bucket: number): number {
    const gap = bucket - this.newest;
    if (gap >= WINDOW_BUCKETS) {
      this.counts.fill(0);
      this.sum = 0;
      this.newest = bucket;
    } else if (gap > 0) {
      for (let n = this.newest + 1; n <= bucket; n++) {
        const i = slot(n);
        this.sum -= this.counts[i]!;
        this.counts[i] = 0;
      }
      this.newest = bucket;
    }
    return this.sum > 0 ? this.sum : 0;
  }

  /**
   * Adds `amount` (negative: gives back, never below 0) to `bucket`, when the window still holds
   * it: a bucket that has left it keeps nothing.
   */
  add(bucket: number, amount: number): void {
    if (amount === 0 || !this.holds(bucket)) return;
    const i = slot(bucket);
    const was = this.counts[i]!;
    const now = was + amount > 0 ? was + amount : 0;
    this.counts[i] = now;
    this.sum += now - was;
  }

  /**
   * Adds `amount` at `bucket`, the current one; when the clock went back past the window, at its
   * oldest bucket instead, so that what is taken still counts (and leaves no later than it would
   * have).
   */
  take(bucket: number, amount: number): void {
    const oldest = this.newest - WINDOW_BUCKETS + 1;
    this.add(bucket < oldest ? oldest : bucket, amount);
  }

  /** Whether the window holds `bucket`. */
  holds(bucket: number): boolean {
    return bucket <= this.newest && bucket > this.newest - WINDOW_BUCKETS;
  }

  /**
   * ms from `now` until the window has let go of at least `excess`, as its oldest buckets leave
   * it (at least 1); when all it holds is not enough, until the current bucket leaves it.
   */
  waitToFree(excess: number, now: number): number {
    let freed = 0;
    for (let n = this.newest - WINDOW_BUCKETS + 1; n <= this.newest; n++) {
      freed += this.counts[slot(n)]!;
      if (freed >= excess - 1e-9) return Math.max(1, (n + WINDOW_BUCKETS) * BUCKET_MS - now);
    }
    return Math.max(1, (Math.floor(now / BUCKET_MS) + WINDOW_BUCKETS) * BUCKET_MS - now);
  }
}

function slot(bucket: number): number {
  const i = bucket % WINDOW_BUCKETS;
  return i < 0 ? i + WINDOW_BUCKETS : i;
}

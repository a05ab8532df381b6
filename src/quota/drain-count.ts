import type { WindowCount } from './window-count';

/**
 * What a counter asks of the count it keeps its usage in: a {@link WindowCount}, where usage
 * slides out of a window, or a {@link DrainCount}, where it drains continuously.
 */
export type UsageCount = Pick<
  WindowCount,
  | 'at'
  | 'add'
  | 'before'
  | 'trimOldest'
  | 'changesAt'
  | 'timeUntil'
  | 'bucketMs'
  | 'reset'
  | 'configure'
> & {
  /** True where usage drains continuously: no window ends, and no reset header says when. */
  readonly drains?: boolean;
};

/** How long a draining count read at one moment is taken to hold (see {@link DrainCount.changesAt}). */
export const DRAIN_HOLD_MS = 100;

/**
 * Usage as a token bucket holds it (Anthropic's input and output, OpenAI's tokens and requests):
 * what was charged drains away continuously at the limit per minute, so room comes back at
 * `limit / 60` a second instead of when a window slides past the charge. The count is how far the
 * bucket is from full.
 *
 * @example
 * ```ts
 * const input = new DrainCount(() => itpm.value, Date.now);
 * input.add(60_000, now);
 * input.at(now + 15_000); // 45 000: a quarter of a minute's refill is back
 * ```
 */
export class DrainCount implements UsageCount {
  readonly drains = true;
  private level = 0;
  private at0 = 0;

  constructor(
    /** The per-minute limit the bucket refills at (0: nothing drains). */
    private readonly limit: () => number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Continuous: never 0, so counters take it as a window that moves. */
  get bucketMs(): number {
    return 1;
  }

  private get rate(): number {
    return this.limit() / 60_000;
  }

  at(now: number): number {
    if (now > this.at0) {
      const drained = this.level - this.rate * (now - this.at0);
      this.level = drained > 0 ? drained : 0;
      this.at0 = now;
    }
    return this.level;
  }

  add(amount: number, now = this.clock()): void {
    const level = this.at(now) + amount;
    this.level = level > 0 ? level : 0;
  }

  /** What was charged before `t` and has not drained by `now`: at most the whole count. */
  before(_t: number, now: number): number {
    return this.at(now);
  }

  trimOldest(amount: number, now?: number): void {
    if (amount > 0) this.add(-amount, now ?? this.clock());
  }

  /**
   * While anything is left it drains, continuously; but it only ever falls, so what is read now
   * over-counts it for a while by no more than it drains. A draw may read it from the model's
   * hot row for {@link DRAIN_HOLD_MS} (at most `limit / 600` less room than there is), instead
   * of asking every counter of every candidate: selection stays flat with the pool's size.
   */
  changesAt(now: number): number {
    return this.at(now) > 0 ? now + DRAIN_HOLD_MS : Infinity;
  }

  /** ms from `now` until the count is at most `target` as it drains. */
  timeUntil(target: number, _recentTarget = Infinity, now = this.clock()): number {
    if (target < 0) return Infinity;
    const left = this.at(now) - target;
    if (left <= 0) return 0;
    const rate = this.rate;
    return rate > 0 ? left / rate : Infinity;
  }

  reset(): void {
    this.level = 0;
  }

  configure(): void {
    // A bucket has no window to configure: it drains at its limit.
  }
}

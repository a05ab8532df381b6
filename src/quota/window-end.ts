/** Below this width (ms) the bounds of an end are tight: its reset header is not read again. */
const TIGHT = 25;

/**
 * When the upstream's current fixed window ends, from its `x-ratelimit-reset-*` headers. Those are
 * coarse (Azure's give whole seconds, rounded up), so each answer only bounds the end, by when its
 * call was sent: between {@link low} and {@link high}. Every answer of the same window narrows
 * the bounds (the tightest is kept, not the last read), so that what is forgotten when the window
 * ends (what was sent before `high`) holds as little as can be of what was sent into the next
 * one; an answer whose bounds lie past them shows that a later window has begun, and the held
 * end is replaced.
 *
 * @example
 * ```ts
 * const end = new WindowEnd();
 * end.take(sentAt + 2_000, sentAt + 3_000, now + 3_000, now, 15_000); // "3" on an answer
 * end.due(Date.now()); // 0, or the `high` of a window that has ended: forget what was sent before it
 * ```
 */
export class WindowEnd {
  /** Earliest send time the window can end at (epoch ms; 0 = not known). */
  low = 0;
  /** Latest send time the window can end at: what was sent before it, it forgets (0 = not known). */
  high = 0;
  /** When answers written after the end can have come back: then the window has ended for us. */
  act = 0;
  /** How long the answer that set {@link high} was on its way back. */
  private lag = 0;
  /** When a reset header was last taken. */
  private readAt = -Infinity;

  /** True while an end is held. */
  get known(): boolean {
    return this.act !== 0;
  }

  /** True when a reset header read at `now` could tell more than the bounds held. */
  wants(now: number): boolean {
    return this.act === 0 || (this.high - this.low > TIGHT && now !== this.readAt);
  }

  /**
   * Take one answer's bounds (`act`: `high` plus its time on the way back). Bounds of the same
   * window narrow coarse ones; fine ones (a reset to the ms) replace fine ones, as each answer's
   * bounds are also off by its own time on the way, which narrowing would add up. Bounds more than `margin`
   * (ms) past the held ones show a later window: returns the held `high` (what was sent before
   * it, the ended window counted), else 0.
   */
  take(low: number, high: number, act: number, now: number, margin: number): number {
    this.readAt = now;
    if (this.act === 0 || high < this.low - margin) {
      this.set(low, high, act);
      return 0;
    }
    if (low >= this.high + margin) {
      const ended = this.high;
      this.set(low, high, act);
      return ended;
    }
    if (this.high - this.low <= TIGHT && high - low <= TIGHT) {
      this.set(low, high, act);
      return 0;
    }
    if (high < this.high) {
      this.high = high;
      this.lag = act - high;
    }
    if (low > this.low) this.low = low < this.high ? low : this.high;
    this.act = this.high + this.lag;
    return 0;
  }

  /** At `now`: the `high` of a window that has ended (and the end is forgotten), else 0. */
  due(now: number): number {
    if (this.act === 0 || now < this.act) return 0;
    const high = this.high;
    this.clear();
    return high;
  }

  /** Forget the end. */
  clear(): void {
    this.low = this.high = this.act = this.lag = 0;
  }

  private set(low: number, high: number, act: number): void {
    this.low = low;
    this.high = high;
    this.act = act;
    this.lag = act - high;
  }
}

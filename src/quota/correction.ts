/**
 * What the upstream counts of one limit beyond our own count (negative: less), as its headers
 * said when an answer was written: the anchoring correction a counter adds to its usage. It
 * fades out linearly over the window (what the upstream counted then slides out of its window by
 * the end of ours), or, where the upstream's window end is known, holds until then and goes on
 * as others' pace through the next window.
 *
 * @example
 * ```ts
 * const correction = new Correction();
 * correction.take(1_200, Date.now()); // the upstream counts 1 200 tokens more than we do
 * correction.at(Date.now(), 60_000); // 1200, fading to 0 over the next minute
 * ```
 */
export class Correction {
  /** Correction (in the limit's unit) and when it was taken. */
  private delta = 0;
  private takenAt = 0;
  /** When the upstream's window ends (epoch ms), when its headers said; 0 = not known. */
  private until = 0;
  /** Others' usage per ms, as seen in that window (0 = none seen). */
  private pace = 0;

  /**
   * The correction now. When the upstream's window end is known: `delta` until then (what it
   * counted stays counted, and goes all at once), then, through the next window, what others add
   * at the pace they went (until a new header says). Else `delta` fading to 0 over `windowMs`
   * after it was taken.
   */
  at(now: number, windowMs: number): number {
    if (this.delta === 0 && this.pace === 0) return 0;
    if (this.until !== 0) {
      if (now < this.until && now >= this.takenAt) return this.delta;
      if (this.pace > 0 && now >= this.until && now < this.until + windowMs) {
        return this.pace * (now - this.until);
      }
      this.delta = 0;
      this.pace = 0;
      return 0;
    }
    const age = now - this.takenAt;
    if (age >= windowMs || age < 0) {
      this.delta = 0;
      return 0;
    }
    return this.delta * (1 - age / windowMs);
  }

  /**
   * What others are expected to add to the upstream's count before its window ends, at the pace
   * they went (0 when none was seen): for routing to leave them room, not for admission.
   */
  expected(now: number, windowMs: number): number {
    if (this.pace === 0) return 0;
    if (now >= this.takenAt && now < this.until) return this.pace * (this.until - now);
    if (now >= this.until && now < this.until + windowMs) {
      return this.pace * (this.until + windowMs - now);
    }
    return 0;
  }

  /**
   * The first time from `now` on when the correction or what others are expected to add can
   * change by time alone: `Infinity` without either, `now` while they change continuously (a
   * fading correction, others' pace), the window's end while a correction holds until it.
   */
  changesAt(now: number): number {
    if (this.delta === 0 && this.pace === 0) return Infinity;
    if (this.until !== 0 && this.pace === 0 && now >= this.takenAt && now < this.until)
      return this.until;
    return now;
  }

  /** ms until the correction is gone, or stops holding (0 when there is none). */
  fadeLeft(now: number, windowMs: number): number {
    if (this.at(now, windowMs) === 0) return 0;
    if (this.until === 0) return this.takenAt + windowMs - now;
    return now < this.until ? this.until - now : this.until + windowMs - now;
  }

  /** True when the correction holds until a known end rather than fading. */
  get holds(): boolean {
    return this.until !== 0 && (this.delta !== 0 || this.pace !== 0);
  }

  /**
   * Take a new correction; `until`: when the upstream's window ends, if known; `pace`: others'
   * usage per ms seen in it.
   */
  take(delta: number, now: number, until = 0, pace = 0): void {
    this.delta = delta;
    this.takenAt = now;
    this.until = until > now ? until : 0;
    this.pace = this.until !== 0 && pace > 0 ? pace : 0;
  }

  /** Drop the correction (usage was reset, or the window it was of changed). */
  clear(): void {
    this.delta = 0;
    this.pace = 0;
  }
}

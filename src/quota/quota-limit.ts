/** Which limit of a model: tokens, requests, input tokens or output tokens per minute. */
export type LimitName = 'tpm' | 'rpm' | 'itpm' | 'otpm';

/**
 * One limit of a model on a deployment: the value in force (configured, or learned from the
 * upstream's headers), and the anchoring correction, the difference between the upstream's own
 * count and ours when its last answer was written. The correction fades out linearly over the
 * window: what the upstream counted then slides out of its window by the end of ours.
 *
 * @example
 * ```ts
 * const tpm = new QuotaLimit('tpm', 10_000);
 * tpm.anchor(1_200, Date.now()); // the upstream counts 1 200 tokens more than we do
 * tpm.correction(Date.now(), 60_000); // 1200, fading to 0 over the next minute
 * ```
 */
export class QuotaLimit {
  /** The limit in force; 0 = none known (unlimited). */
  value: number;
  /**
   * True while the value in force came from the upstream's headers: none was configured, or the
   * headers disagreed with it. A configured limit the headers confirm stays configured.
   */
  learned = false;
  /** Correction (in the limit's unit) and when it was taken. */
  private delta = 0;
  private at = 0;

  constructor(
    readonly name: LimitName,
    /** What the configuration says, if anything. */
    readonly configured: number | undefined,
  ) {
    this.value = configured ?? 0;
  }

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
  correction(now: number, windowMs: number): number {
    if (this.delta === 0 && this.pace === 0) return 0;
    if (this.until !== 0) {
      if (now < this.until && now >= this.at) return this.delta;
      if (this.pace > 0 && now >= this.until && now < this.until + windowMs) {
        return this.pace * (now - this.until);
      }
      this.delta = 0;
      this.pace = 0;
      return 0;
    }
    const age = now - this.at;
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
    if (now >= this.at && now < this.until) return this.pace * (this.until - now);
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
    if (this.until !== 0 && this.pace === 0 && now >= this.at && now < this.until)
      return this.until;
    return now;
  }

  /** ms until the correction is gone, or stops holding (0 when there is none). */
  fadeLeft(now: number, windowMs: number): number {
    if (this.correction(now, windowMs) === 0) return 0;
    if (this.until === 0) return this.at + windowMs - now;
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
  anchor(delta: number, now: number, until = 0, pace = 0): void {
    this.delta = delta;
    this.at = now;
    this.until = until > now ? until : 0;
    this.pace = this.until !== 0 && pace > 0 ? pace : 0;
  }

  /** Drop the correction (usage was reset). */
  clear(): void {
    this.delta = 0;
    this.pace = 0;
  }

  /**
   * Take the upstream's reported limit. Returns the previous value when it changed (so the caller
   * can log a configured limit that disagreed), else `undefined`.
   */
  learn(reported: number): number | undefined {
    if (!(reported > 0)) return undefined;
    const was = this.value;
    this.learned = reported !== this.configured;
    if (was === reported) return undefined;
    this.value = reported;
    return was;
  }
}

/**
 * The four limits of a model, as configured (an absent one is unlimited until learned).
 *
 * @example
 * ```ts
 * limitsOf({ tpm: 10_000, rpm: 60 }).tpm.value; // 10000
 * ```
 */
export function limitsOf(
  config: Partial<Record<LimitName, number>>,
): Readonly<Record<LimitName, QuotaLimit>> {
  return Object.freeze({
    tpm: new QuotaLimit('tpm', config.tpm),
    rpm: new QuotaLimit('rpm', config.rpm),
    itpm: new QuotaLimit('itpm', config.itpm),
    otpm: new QuotaLimit('otpm', config.otpm),
  });
}

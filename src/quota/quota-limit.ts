/** Which limit of a model: tokens, requests, input tokens or output tokens per minute. */
export type LimitName = 'tpm' | 'rpm' | 'itpm' | 'otpm';

/**
 * One limit of a model on a deployment: the value in force, configured or learned from the
 * upstream's headers. What the upstream counts beyond ours is its counter's `Correction`,
 * kept apart.
 *
 * A reading above the configured value does not replace it: the configuration may hold a share of
 * a pool the headers speak of whole. A reading below it is a correction, not a new configuration:
 * it holds for a window after the last answer that reported it, then the configured value is back (a proxy
 * rewriting headers, or a deployment lowered for a moment, cannot lock a model out). A call that
 * only a learned value says can never fit goes through as one probe per window, whose answer's
 * headers say the limit again.
 *
 * @example
 * ```ts
 * const tpm = new QuotaLimit('tpm', 10_000);
 * tpm.learn(20_000); // 10000: the headers said otherwise, and the value in force is now theirs
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
  /**
   * True while the headers report more than the configured value: they speak of a pool the
   * configuration holds a share of, and their remaining is the pool's, not this share's.
   */
  pooled = false;
  /** Epoch ms when a value below the configured one lapses (0: none holds). */
  private fadesAt = 0;
  /** Epoch ms of the last call let through as a probe of a learned value. */
  private probedAt = -Infinity;

  constructor(
    readonly name: LimitName,
    /** What the configuration says, if anything. */
    readonly configured: number | undefined,
  ) {
    this.value = configured ?? 0;
  }

  /**
   * Take the upstream's reported limit at `now`; one below the configured value holds for
   * `span` ms from now (each answer that reports it again renews it). Returns the previous value
   * when it changed (so the caller can log a configured limit that disagreed), else `undefined`.
   */
  learn(reported: number, now = 0, span = 0): number | undefined {
    if (!(reported > 0)) return undefined;
    // More than configured is the pool's whole (a project's or a subscription's limit that the
    // configuration split between keys by hand): the configured share stays.
    this.pooled =
      this.configured !== undefined && this.configured > 0 && reported > this.configured;
    if (this.pooled) {
      const lowered = this.value;
      return this.lapse(Infinity) ? lowered : undefined;
    }
    const was = this.value;
    this.learned = reported !== this.configured;
    const lower = this.configured !== undefined && reported < this.configured;
    this.fadesAt = lower && span > 0 ? now + span : 0;
    if (was === reported) return undefined;
    this.value = reported;
    this.probedAt = -Infinity;
    return was;
  }

  /** When a value below the configured one lapses (epoch ms), `Infinity` when none holds. */
  get changesAt(): number {
    return this.fadesAt === 0 ? Infinity : this.fadesAt;
  }

  /**
   * Back to the configured value once a lower reading was not renewed for its window. Returns
   * true when the value in force changed.
   */
  lapse(now: number): boolean {
    if (this.fadesAt === 0 || now < this.fadesAt) return false;
    this.fadesAt = 0;
    this.learned = false;
    const changed = this.value !== this.configured;
    this.value = this.configured ?? 0;
    return changed;
  }

  /**
   * Whether a charge above the value in force may go as this window's probe: the value was
   * learned (a header may have said too little) and no probe went in the last `span` ms.
   */
  probeDue(charge: number, now: number, span: number): boolean {
    return this.learned && charge > this.value && now - this.probedAt >= span;
  }

  /**
   * True while the value in force is in doubt (a lower reading holds, or a probe went): the next
   * answers' limit headers are read, to confirm or correct it.
   */
  get doubtful(): boolean {
    return this.fadesAt !== 0 || this.probedAt !== -Infinity;
  }

  /** A call above the learned value went as a probe at `now`. */
  probed(now: number): void {
    this.probedAt = now;
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

/** Which limit of a model: tokens, requests, input tokens or output tokens per minute. */
export type LimitName = 'tpm' | 'rpm' | 'itpm' | 'otpm';

/**
 * One limit of a model on a deployment: the value in force, configured or learned from the
 * upstream's headers. What the upstream counts beyond ours is its counter's `Correction`,
 * kept apart.
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

  constructor(
    readonly name: LimitName,
    /** What the configuration says, if anything. */
    readonly configured: number | undefined,
  ) {
    this.value = configured ?? 0;
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

import { z } from 'zod';

/*
 * The values every option schema is made of (counts, names, flags, tags), each answering every
 * failure with one message that says what to write. A leaf: the feature folders' own option
 * schemas and the root schema in config/ read it alike.
 */

/**
 * A whole number of at least `least` (0 or 1): not a number, a fraction and one below the bound
 * all get the one `error`.
 *
 * @example
 * ```ts
 * const rpm = wholeNumber('must be a non-negative integer (0 = unlimited)');
 * const attempts = wholeNumber('must be a whole number of attempts, at least 1', 1);
 * rpm.safeParse(2.5).success; // false
 * ```
 */
export function wholeNumber(error: string, least: 0 | 1 = 0): z.ZodNumber {
  return z.number({ error }).int({ error }).min(least, { error });
}

/**
 * A count of at least 1.
 *
 * @example
 * ```ts
 * const maxSessions = positiveInteger.optional();
 * ```
 */
export const positiveInteger = wholeNumber('must be a positive integer', 1);

/**
 * A name: a string with something besides blanks.
 *
 * @example
 * ```ts
 * name.safeParse(' ').success; // false
 * ```
 */
export const name = z
  .string({ error: 'must be a non-empty string' })
  .trim()
  .min(1, { error: 'must be a non-empty string' });

/**
 * `true` or `false`.
 *
 * @example
 * ```ts
 * const simulate = flag.optional();
 * ```
 */
export const flag = z.boolean({ error: 'must be true or false' });

const tagMessage = "must be a list of tags, words without blanks or commas such as ['eu', 'gdpr']";

/**
 * Deployment tags: words without blanks or commas (a header carries them comma-separated).
 *
 * @example
 * ```ts
 * tags.parse(['eu', 'gdpr']);
 * ```
 */
export const tags = z.array(
  z
    .string({ error: tagMessage })
    .max(64, { error: 'must be at most 64 characters' })
    .regex(/^[^\s,]+$/, { error: tagMessage }),
  { error: tagMessage },
);

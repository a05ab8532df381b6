/**
 * Why a call cannot be translated to the other vendor's API: the field that the target API
 * cannot express, and what would be lost. Translation refuses rather than guesses: the fallback
 * that would need it is skipped.
 *
 * @example
 * ```ts
 * const refusal: Refusal = { field: 'n', why: 'Claude answers one choice per call' };
 * ```
 */
export interface Refusal {
  /** The path of the field in the caller's body: `n`, `messages[2].content[0].input_audio`. */
  readonly field: string;
  readonly why: string;
}

/** A translated body, or the refusal that stopped it. */
export type Translated<T> = { readonly body: T } | { readonly refused: Refusal };

/** Thrown inside one translation to stop it; caught at its entry and returned as a refusal. */
class RefusedField extends Error {
  constructor(readonly refusal: Refusal) {
    super(`${refusal.field}: ${refusal.why}`);
  }
}

/**
 * Stops the translation under way: `field` cannot be expressed in the target API.
 *
 * @example
 * ```ts
 * if (body.n > 1) refuse('n', 'Claude answers one choice per call');
 * ```
 */
export function refuse(field: string, why: string): never {
  throw new RefusedField({ field, why });
}

/**
 * Runs one translation, turning a {@link refuse} inside it into a refusal.
 *
 * @example
 * ```ts
 * const out = translating(() => chatToMessagesBody(body, target));
 * if ('refused' in out) console.log(out.refused.field);
 * ```
 */
export function translating<T>(run: () => T): Translated<T> {
  try {
    return { body: run() };
  } catch (error) {
    if (error instanceof RefusedField) return { refused: error.refusal };
    throw error;
  }
}

/** Whether a field is set: neither absent nor null. */
export const isSet = (value: unknown): boolean => value !== undefined && value !== null;

/** A plain JSON object (not null, not an array). */
export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

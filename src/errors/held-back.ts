/**
 * Errors the switchboard raised itself because it held a call back (nothing was sent), each with
 * whether its wait runs to a period's end (a tenant's day or month) rather than within a minute.
 */
const raised = new WeakMap<object, boolean>();

/**
 * The longest wait the switchboard's own refusal may ask a client for: a tenant's monthly budget
 * comes back at the start of the next UTC month, at most 31 days away (plus a day of margin).
 */
export const MAX_HELD_BACK_WAIT_MS = 32 * 86_400_000;

/**
 * Marks `error` as one the switchboard raised itself (no room, a tenant's limit or budget): it is
 * never retried, and its wait is the switchboard's own figure, not an upstream's. `untilPeriodEnd`:
 * the wait runs to the end of a UTC day or month (a tenant's tokens per day or budget), which an
 * HTTP answer passes on whole instead of capping at a minute.
 *
 * @example
 * ```ts
 * throw heldBack(new RateLimitError(429, body, message, headers));
 * ```
 */
export function heldBack<E extends object>(error: E, untilPeriodEnd = false): E {
  raised.set(error, untilPeriodEnd);
  return error;
}

/**
 * True for an error {@link heldBack} marked: nothing was sent, so there is nothing to fail over.
 *
 * @example
 * ```ts
 * if (isHeldBack(error)) console.log('the switchboard held the call back');
 * ```
 */
export function isHeldBack(error: unknown): boolean {
  return typeof error === 'object' && error !== null && raised.has(error);
}

/**
 * True for a refusal whose wait runs to a period's end ({@link heldBack} with `untilPeriodEnd`): its
 * `retry-after` may be trusted as far as {@link MAX_HELD_BACK_WAIT_MS}.
 *
 * @example
 * ```ts
 * const cap = waitsForPeriodEnd(error) ? MAX_HELD_BACK_WAIT_MS : MAX_RETRY_AFTER_MS;
 * ```
 */
export function waitsForPeriodEnd(error: unknown): boolean {
  return typeof error === 'object' && error !== null && raised.get(error) === true;
}

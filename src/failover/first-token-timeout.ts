import type { ProviderErrors } from '../registry/deployment';

/** The timeout errors that stand for a stream that sent no event in time. */
const firstTokenTimeouts = new WeakSet<object>();

/**
 * The error of a stream that sent no event within `firstTokenTimeout`: the SDK's own
 * `APIConnectionTimeoutError` (what a caller sees if every attempt fails so), told apart from a
 * plain timeout by {@link isFirstTokenTimeout} so that failover and metrics name it.
 *
 * @example
 * ```ts
 * const error = firstTokenTimeoutError(OpenAI, 'east', 500);
 * isFirstTokenTimeout(error); // => true
 * ```
 */
export function firstTokenTimeoutError(
  errors: Pick<ProviderErrors, 'APIConnectionTimeoutError'>,
  deployment: string,
  ms: number,
): Error {
  const error = new errors.APIConnectionTimeoutError({
    message: `Deployment ${deployment} sent no stream event within ${ms} ms (firstTokenTimeout).`,
  });
  firstTokenTimeouts.add(error);
  return error;
}

/** Whether `error` was made by {@link firstTokenTimeoutError}. */
export function isFirstTokenTimeout(error: unknown): boolean {
  return typeof error === 'object' && error !== null && firstTokenTimeouts.has(error);
}

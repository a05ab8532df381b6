import type { ProviderErrors } from '../registry/deployment';
import type { Provider } from '../types';

/** Anthropic's `error.type` per status (its API reference's error table). */
const ANTHROPIC_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

interface SdkError {
  status?: unknown;
  headers?: unknown;
  error?: unknown;
  message?: unknown;
}

type Generate = (
  status: number | undefined,
  body: object | undefined,
  message: string | undefined,
  headers: Headers | undefined,
) => Error;

/**
 * An error of the other vendor's SDK (`from`) as the caller's SDK would have raised it: the same
 * status, message and headers (`retry-after` included) in the caller's class for that status
 * (`RateLimitError`, `BadRequestError`...), connection errors, timeouts and aborts in the
 * caller's classes; the switchboard's own errors as they are.
 *
 * @example
 * ```ts
 * const e = callerError(anthropicRateLimit, anthropicErrors, openaiErrors, 'openai');
 * e instanceof OpenAI.RateLimitError; // true
 * ```
 */
export function callerError(
  error: unknown,
  from: ProviderErrors,
  to: ProviderErrors,
  caller: Provider,
): unknown {
  if (!(error instanceof from.APIError)) return error;
  const e: SdkError & Error = error;
  if ((e as object) instanceof from.APIUserAbortError)
    return new to.APIUserAbortError({ message: e.message });
  if ((e as object) instanceof from.APIConnectionTimeoutError) {
    return new to.APIConnectionTimeoutError({ message: e.message });
  }
  if ((e as object) instanceof from.APIConnectionError) {
    return new to.APIConnectionError({ message: e.message, cause: e });
  }
  const status = typeof e.status === 'number' ? e.status : undefined;
  const message = innerMessage(e.error) ?? e.message;
  // Each SDK's `generate` takes the body as its API sends it: Anthropic's whole, OpenAI's `{ error }`.
  const body =
    caller === 'anthropic'
      ? { type: 'error', error: { type: ANTHROPIC_TYPES[status ?? 0] ?? 'api_error', message } }
      : { error: { message, type: innerType(e.error) ?? null, param: null, code: null } };
  const generate = (to.APIError as unknown as { generate: Generate }).generate;
  const headers = e.headers instanceof Headers ? e.headers : new Headers();
  return generate.call(to.APIError, status, body, message, headers);
}

/** The message inside an SDK's kept error body (OpenAI keeps `error`, Anthropic the whole body). */
function innerMessage(body: unknown): string | undefined {
  const b = body as { message?: unknown; error?: { message?: unknown } } | null | undefined;
  const m = b?.error?.message ?? b?.message;
  return typeof m === 'string' ? m : undefined;
}

function innerType(body: unknown): string | undefined {
  const b = body as { type?: unknown; error?: { type?: unknown } } | null | undefined;
  const t = b?.error?.type ?? b?.type;
  return typeof t === 'string' && t !== 'error' ? t : undefined;
}

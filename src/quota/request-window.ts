/**
 * The short window an upstream enforces requests over: Azure OpenAI evaluates RPM "typically
 * over 1 or 10 seconds", allowing `rpm / 60` or `rpm / 6` there.
 *
 * @example
 * ```ts
 * const window: RequestWindow = '1s'; // 600 RPM: 10 requests a second
 * ```
 */
export type RequestWindow = '1s' | '10s';

/**
 * The requests `rpm` allows in `window`, at least 1.
 *
 * @example
 * ```ts
 * shortLimit(600, '1s'); // 10
 * shortLimit(120, '10s'); // 20
 * ```
 */
export function shortLimit(rpm: number, window: RequestWindow): number {
  const limit = Math.floor(rpm / (window === '1s' ? 60 : 6));
  return limit > 1 ? limit : 1;
}

/** The words of a 429 that refused a call for the request limit, not the token limit. */
const REQUEST_LIMIT_WORDS =
  /call rate limit|requests per min|request rate limit|number of requests/i;

/**
 * Whether an upstream's 429 says its request limit was hit, by its own words: Azure OpenAI's
 * message "... have exceeded call rate limit of your current ... pricing tier" ("token rate
 * limit" for tokens), OpenAI's "Rate limit reached ... on requests per min (RPM)" or its error
 * `type: 'requests'`. The SDKs' errors carry the body's `error` object and its message.
 *
 * @example
 * ```ts
 * requestLimitHit({ status: 429, message: '429 Requests to the ChatCompletions_Create Operation ' +
 *   'under Azure OpenAI API version 2024-10-21 have exceeded call rate limit ...' }); // true
 * ```
 */
export function requestLimitHit(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { status, message, type } = error as {
    status?: unknown;
    message?: unknown;
    type?: unknown;
  };
  if (status !== 429) return false;
  if (type === 'requests') return true;
  const body = (error as { error?: unknown }).error;
  const inner =
    typeof body === 'object' && body !== null ? (body as { message?: unknown }).message : undefined;
  return (
    (typeof message === 'string' && REQUEST_LIMIT_WORDS.test(message)) ||
    (typeof inner === 'string' && REQUEST_LIMIT_WORDS.test(inner))
  );
}

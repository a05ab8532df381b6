/** One limit as an upstream's headers report it; absent fields were not sent. */
export interface ReportedLimit {
  limit?: number;
  remaining?: number;
}

/**
 * The rate limits an answer's headers report: Azure OpenAI's `x-ratelimit-{limit,remaining}-
 * {requests,tokens}`, Anthropic's `anthropic-ratelimit-{requests,tokens,input-tokens,
 * output-tokens}-{limit,remaining}`.
 *
 * @example
 * ```ts
 * const reading: RateLimitReading = { tokens: { limit: 10_000, remaining: 7_400 } };
 * ```
 */
export interface RateLimitReading {
  requests?: ReportedLimit;
  tokens?: ReportedLimit;
  input?: ReportedLimit;
  output?: ReportedLimit;
}

/** Something with `get(name)`, as `Headers` is. */
export interface HeaderSource {
  get(name: string): string | null;
}

function num(headers: HeaderSource, name: string): number | undefined {
  const raw = headers.get(name);
  if (raw === null || raw === '') return undefined;
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

function pair(
  headers: HeaderSource,
  limitName: string,
  remainingName: string,
  withLimit: boolean,
): ReportedLimit | undefined {
  const remaining = num(headers, remainingName);
  const limit = withLimit ? num(headers, limitName) : undefined;
  if (remaining === undefined && limit === undefined) return undefined;
  return { limit, remaining };
}

/**
 * Reads the rate-limit headers of an answer, or returns `undefined` when it has none. The common
 * case (an answer without them) costs one or two lookups; `withLimits: false` skips the `*-limit`
 * headers when the limits are already known.
 *
 * @example
 * ```ts
 * readRateLimits(new Headers({ 'x-ratelimit-remaining-tokens': '7400' }));
 * // { tokens: { limit: undefined, remaining: 7400 } }
 * ```
 */
export function readRateLimits(
  headers: HeaderSource,
  withLimits = true,
): RateLimitReading | undefined {
  if (
    headers.get('x-ratelimit-remaining-tokens') !== null ||
    headers.get('x-ratelimit-remaining-requests') !== null
  ) {
    const tokens = pair(
      headers,
      'x-ratelimit-limit-tokens',
      'x-ratelimit-remaining-tokens',
      withLimits,
    );
    const requests = pair(
      headers,
      'x-ratelimit-limit-requests',
      'x-ratelimit-remaining-requests',
      withLimits,
    );
    return { tokens, requests };
  }
  if (headers.get('anthropic-ratelimit-requests-remaining') === null) {
    if (headers.get('anthropic-ratelimit-input-tokens-remaining') === null) return undefined;
  }
  const a = (what: string) =>
    pair(
      headers,
      `anthropic-ratelimit-${what}-limit`,
      `anthropic-ratelimit-${what}-remaining`,
      withLimits,
    );
  return {
    requests: a('requests'),
    tokens: a('tokens'),
    input: a('input-tokens'),
    output: a('output-tokens'),
  };
}

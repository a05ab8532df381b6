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

function num(raw: string | null): number | undefined {
  if (raw === null || raw === '') return undefined;
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/** Whose rate-limit headers to read: Azure OpenAI's `x-ratelimit-*` or Anthropic's. */
export type RateLimitFamily = 'openai' | 'anthropic';

/**
 * Reads the rate-limit headers of an answer, or returns `undefined` when it has none. Each
 * lookup in a fetch `Headers` costs about a µs, so the family is read alone when known: an
 * answer without them then costs one or two lookups, one with them two (`withLimits: false`
 * skips the `*-limit` headers when the limits are already known).
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
  family?: RateLimitFamily,
): RateLimitReading | undefined {
  if (family !== 'anthropic') {
    const reading = readOpenAI(headers, withLimits);
    if (reading !== undefined || family === 'openai') return reading;
  }
  return readAnthropic(headers, withLimits);
}

function readOpenAI(headers: HeaderSource, withLimits: boolean): RateLimitReading | undefined {
  const tokensLeft = headers.get('x-ratelimit-remaining-tokens');
  const requestsLeft = headers.get('x-ratelimit-remaining-requests');
  if (tokensLeft === null && requestsLeft === null) return undefined;
  const tokens = reported(tokensLeft, withLimits ? headers.get('x-ratelimit-limit-tokens') : null);
  const requests = reported(
    requestsLeft,
    withLimits ? headers.get('x-ratelimit-limit-requests') : null,
  );
  return { tokens, requests };
}

function readAnthropic(headers: HeaderSource, withLimits: boolean): RateLimitReading | undefined {
  const requestsLeft = headers.get('anthropic-ratelimit-requests-remaining');
  const inputLeft = headers.get('anthropic-ratelimit-input-tokens-remaining');
  if (requestsLeft === null && inputLeft === null) return undefined;
  const limit = (what: string) =>
    withLimits ? headers.get(`anthropic-ratelimit-${what}-limit`) : null;
  return {
    requests: reported(requestsLeft, limit('requests')),
    tokens: reported(headers.get('anthropic-ratelimit-tokens-remaining'), limit('tokens')),
    input: reported(inputLeft, limit('input-tokens')),
    output: reported(
      headers.get('anthropic-ratelimit-output-tokens-remaining'),
      limit('output-tokens'),
    ),
  };
}

function reported(remaining: string | null, limit: string | null): ReportedLimit | undefined {
  const r = num(remaining);
  const l = num(limit);
  if (r === undefined && l === undefined) return undefined;
  return { limit: l, remaining: r };
}

const DURATION = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * ms until the upstream's current window for `what` ends, from `x-ratelimit-reset-tokens` /
 * `-requests`: seconds (`15`, `1.25`) or a duration (`6m0s`, `12ms`, `1.5s`); `undefined` when
 * absent or unreadable.
 *
 * @example
 * ```ts
 * readReset(new Headers({ 'x-ratelimit-reset-tokens': '1m30s' }), 'tokens'); // 90000
 * ```
 */
export function readReset(headers: HeaderSource, what: 'tokens' | 'requests'): number | undefined {
  const raw = headers.get(
    what === 'tokens' ? 'x-ratelimit-reset-tokens' : 'x-ratelimit-reset-requests',
  );
  if (raw === null || raw === '') return undefined;
  const n = Number(raw);
  if (Number.isFinite(n)) return n >= 0 ? n * 1000 : undefined;
  let ms = 0;
  let matched = 0;
  for (const m of raw.matchAll(DURATION)) {
    ms += Number(m[1]) * UNIT_MS[m[2]!]!;
    matched += m[0].length;
  }
  return matched === raw.length && Number.isFinite(ms) ? ms : undefined;
}

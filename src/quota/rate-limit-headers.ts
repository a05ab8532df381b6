import { DEFAULT_MAX_COOLDOWN, upstreamCount, upstreamWait } from '../runtime/upstream-numbers';
import type { RequestWindow } from './request-window';

/**
 * When the upstream's current window ends, by its `x-ratelimit-reset-*` header: in `ms` from when
 * the header was written, to the header's precision `grain` (ms): `15` says 15 000 to the second,
 * `1.25` 1 250 to 10 ms, `12ms` 12 to the ms.
 *
 * @example
 * ```ts
 * const reset: ReportedReset = { ms: 15_000, grain: 1_000 };
 * ```
 */
interface ReportedReset {
  ms: number;
  grain: number;
}

/** One limit as an upstream's headers report it; absent fields were not sent (or not asked for). */
export interface ReportedLimit {
  limit?: number;
  remaining?: number;
  /** Only Azure OpenAI's tokens and requests have one, and only when asked for. */
  reset?: ReportedReset;
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

/** Whose rate-limit headers to read: Azure OpenAI's `x-ratelimit-*` or Anthropic's. */
export type RateLimitFamily = 'openai' | 'anthropic';

/**
 * Azure OpenAI's short request windows in a minute: its `x-ratelimit-limit-requests` and
 * `-remaining-requests` speak of the 10 s window it enforces requests over, not of the minute
 * (20 for 120 RPM).
 */
const AZURE_REQUEST_WINDOWS = 6;

/**
 * The per-minute request limit a requests header's `limit` stands for: Anthropic's speaks of
 * the minute, Azure's of its short window (10 s, or 1 s where it counts over `window` 1 s).
 *
 * @example
 * ```ts
 * requestsPerMinute(20, 'openai'); // 120
 * requestsPerMinute(10, 'openai', '1s'); // 600
 * ```
 */
export function requestsPerMinute(
  limit: number,
  family: RateLimitFamily,
  window: RequestWindow = '10s',
): number {
  if (family === 'anthropic') return limit;
  return limit * (window === '1s' ? 60 : AZURE_REQUEST_WINDOWS);
}

/**
 * Reads the rate-limit headers of an answer, or returns `undefined` when it has none: a parser,
 * with no state of its own. With `into`, the reading is written into that one (and its limits'
 * objects), which is returned, rather than made: a ledger reads every answer into one reading
 * (see `AnswerLog.read`). Nothing is written when there is nothing to read.
 *
 * Each lookup in a fetch `Headers` costs about a µs, so the family is read alone when known: an
 * answer without them then costs one or two lookups, one with them two (`withLimits: false`
 * skips the `*-limit` headers when the limits are already known), and the `x-ratelimit-reset-*`
 * headers are read only with `withResets`.
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
  withResets = false,
  into?: RateLimitReading,
): RateLimitReading | undefined {
  if (family !== 'anthropic') {
    const reading = readOpenAI(headers, withLimits, withResets, into);
    if (reading !== undefined || family === 'openai') return reading;
  }
  return readAnthropic(headers, withLimits, into);
}

function readOpenAI(
  headers: HeaderSource,
  withLimits: boolean,
  withResets: boolean,
  into: RateLimitReading | undefined,
): RateLimitReading | undefined {
  const tokensLeft = headers.get('x-ratelimit-remaining-tokens');
  const requestsLeft = headers.get('x-ratelimit-remaining-requests');
  if (tokensLeft === null && requestsLeft === null) return undefined;
  const tokens = reported(
    tokensLeft,
    withLimits ? headers.get('x-ratelimit-limit-tokens') : null,
    into?.tokens,
  );
  const requests = reported(
    requestsLeft,
    withLimits ? headers.get('x-ratelimit-limit-requests') : null,
    into?.requests,
  );
  if (withResets) {
    if (tokens !== undefined) tokens.reset = readResetBound(headers, 'tokens');
    if (requests !== undefined) requests.reset = readResetBound(headers, 'requests');
  }
  if (into === undefined) return { tokens, requests };
  into.tokens = tokens;
  into.requests = requests;
  // Anthropic's, from an earlier answer of a ledger that reads either kind.
  if (into.input !== undefined) into.input = undefined;
  if (into.output !== undefined) into.output = undefined;
  return into;
}

function readAnthropic(
  headers: HeaderSource,
  withLimits: boolean,
  into: RateLimitReading | undefined,
): RateLimitReading | undefined {
  const requestsLeft = headers.get('anthropic-ratelimit-requests-remaining');
  const inputLeft = headers.get('anthropic-ratelimit-input-tokens-remaining');
  if (requestsLeft === null && inputLeft === null) return undefined;
  const limit = (what: string) =>
    withLimits ? headers.get(`anthropic-ratelimit-${what}-limit`) : null;
  const reading = into ?? {};
  reading.requests = reported(requestsLeft, limit('requests'), into?.requests);
  reading.tokens = rounded(
    reported(headers.get('anthropic-ratelimit-tokens-remaining'), limit('tokens'), into?.tokens),
  );
  reading.input = rounded(reported(inputLeft, limit('input-tokens'), into?.input));
  reading.output = rounded(
    reported(
      headers.get('anthropic-ratelimit-output-tokens-remaining'),
      limit('output-tokens'),
      into?.output,
    ),
  );
  return reading;
}

/**
 * Half of the thousand Anthropic rounds its remaining tokens to ("rounded to the nearest
 * thousand"): what is left may be this much below what the header says.
 */
const ANTHROPIC_ROUNDING = 500;

/** A remaining count rounded to the nearest thousand, taken on the safe side: 500 less. */
function rounded(limit: ReportedLimit | undefined): ReportedLimit | undefined {
  if (limit?.remaining !== undefined) {
    limit.remaining = Math.max(0, limit.remaining - ANTHROPIC_ROUNDING);
  }
  return limit;
}

/** One limit's values, written into `into` (an earlier reading's) when given. */
function reported(
  remaining: string | null,
  limit: string | null,
  into: ReportedLimit | undefined,
): ReportedLimit | undefined {
  const r = upstreamCount(remaining);
  const l = upstreamCount(limit);
  if (r === undefined && l === undefined) return undefined;
  if (into === undefined) return { limit: l, remaining: r };
  into.limit = l;
  into.remaining = r;
  if (into.reset !== undefined) into.reset = undefined;
  return into;
}

const DURATION = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * ms until the upstream's current window for `what` ends, from `x-ratelimit-reset-tokens` /
 * `-requests`: seconds (`15`, `1.25`) or a duration (`6m0s`, `12ms`, `1.5s`), with the header's
 * precision (`grain`: the unit of its last digit, in ms); `undefined` when absent or unreadable.
 *
 * @example
 * ```ts
 * readResetBound(new Headers({ 'x-ratelimit-reset-tokens': '2' }), 'tokens'); // { ms: 2000, grain: 1000 }
 * ```
 */
export function readResetBound(
  headers: HeaderSource,
  what: 'tokens' | 'requests',
): ReportedReset | undefined {
  const raw = headers.get(
    what === 'tokens' ? 'x-ratelimit-reset-tokens' : 'x-ratelimit-reset-requests',
  );
  return raw === null || raw === '' ? undefined : parseReset(raw);
}

function parseReset(raw: string): ReportedReset | undefined {
  const n = Number(raw);
  if (Number.isFinite(n)) {
    if (n < 0) return undefined;
    const dot = raw.indexOf('.');
    const decimals = dot < 0 ? 0 : raw.length - dot - 1;
    return { ms: bounded(n * 1000), grain: decimals >= 3 ? 1 : 1000 / 10 ** decimals };
  }
  let ms = 0;
  let matched = 0;
  let grain = 1000;
  for (const m of raw.matchAll(DURATION)) {
    ms += Number(m[1]) * UNIT_MS[m[2]!]!;
    matched += m[0].length;
    grain = m[2] === 'ms' || m[1]!.includes('.') ? 1 : UNIT_MS[m[2]!]!;
  }
  return matched === raw.length && Number.isFinite(ms) ? { ms: bounded(ms), grain } : undefined;
}

/** A window that ends later than the longest cooldown is read as ending then. */
function bounded(ms: number): number {
  return upstreamWait(ms, DEFAULT_MAX_COOLDOWN) ?? 0;
}

/*
 * Every number an upstream sends (a header, a usage field) is read here, and only here, into a
 * number the rest of the switchboard can do arithmetic and dates with. Whoever controls or sits
 * in front of a `baseURL` controls these values: `1e300`, `-1`, `NaN`, `Infinity`, an HTTP date in
 * the year 275760. Bounded once at the edge, they cannot overflow a sum, poison a window with
 * `NaN`, or make `new Date(...).toISOString()` throw deep inside a call.
 */
import type { TokenUsage } from '../types';

/**
 * The largest count (tokens, requests) taken from an upstream: above any real quota (a trillion
 * tokens), and small enough that sums of many such counts stay exact integers.
 */
const MAX_UPSTREAM_COUNT = 1e12;

/**
 * The longest wait (ms) taken from an upstream's `retry-after` or reset headers, and the default
 * cap of any cooldown (`maxCooldown`): one day.
 *
 * @example
 * ```ts
 * upstreamWait(retryAfterMs, DEFAULT_MAX_COOLDOWN);
 * ```
 */
export const DEFAULT_MAX_COOLDOWN = 86_400_000;

/**
 * A count an upstream reported (a header's text, or a number from a JSON body): a finite number
 * at least 0, at most {@link MAX_UPSTREAM_COUNT}. Undefined when absent, empty, negative or not a
 * number; `Infinity` and `1e300` count as the cap.
 *
 * @example
 * ```ts
 * upstreamCount('7400'); // 7400
 * upstreamCount('1e300'); // 1e12
 * upstreamCount('-1'); // undefined
 * ```
 */
export function upstreamCount(raw: unknown): number | undefined {
  const n = toNumber(raw);
  if (n === undefined || !(n >= 0)) return undefined;
  return n > MAX_UPSTREAM_COUNT ? MAX_UPSTREAM_COUNT : n;
}

/**
 * A wait in ms an upstream asked for (or a time until its window ends), at most `max`: negative,
 * empty or not a number is undefined (the upstream said nothing usable), `Infinity` and `1e300`
 * are `max`.
 *
 * @example
 * ```ts
 * upstreamWait(1e303, 86_400_000); // 86400000
 * upstreamWait(Number.NaN, 86_400_000); // undefined
 * ```
 */
export function upstreamWait(ms: unknown, max: number): number | undefined {
  const n = toNumber(ms);
  if (n === undefined || !(n >= 0)) return undefined;
  return n > max ? max : n;
}

/**
 * Token usage an answer reported, each count through {@link upstreamCount} (an unreadable count
 * is 0, as an absent one is); the same object when every count was already fine.
 *
 * @example
 * ```ts
 * upstreamUsage({ input: 12, output: 1e308 * 10 }); // { input: 12, output: 1e12 }
 * ```
 */
export function upstreamUsage(usage: TokenUsage | undefined): TokenUsage | undefined {
  if (usage === undefined) return undefined;
  const { input, output, cacheRead, cacheWrite } = usage;
  if (fine(input) && fine(output) && optionalFine(cacheRead) && optionalFine(cacheWrite)) {
    return usage;
  }
  const out: TokenUsage = { input: upstreamCount(input) ?? 0, output: upstreamCount(output) ?? 0 };
  if (cacheRead !== undefined) out.cacheRead = upstreamCount(cacheRead) ?? 0;
  if (cacheWrite !== undefined) out.cacheWrite = upstreamCount(cacheWrite) ?? 0;
  return out;
}

function fine(n: unknown): boolean {
  return typeof n === 'number' && n >= 0 && n <= MAX_UPSTREAM_COUNT;
}

function optionalFine(n: unknown): boolean {
  return n === undefined || fine(n);
}

function toNumber(raw: unknown): number | undefined {
  if (typeof raw === 'number') return Number.isNaN(raw) ? undefined : raw;
  if (typeof raw !== 'string') return undefined;
  const text = raw.trim();
  if (text === '') return undefined;
  const n = Number(text);
  return Number.isNaN(n) ? undefined : n;
}

import type { PeerUsage } from '../../quota/peer-usage';
import type { SharedReading } from '../../quota/reading';
import type { RateLimitReading, ReportedLimit } from '../../quota/rate-limit-headers';

/**
 * One instance's usage as published: for each model (by field), its buckets as flat triples
 * `[index, tokens, requests, ...]`; bucket `index` covers `[index * bucketMs, (index + 1) * bucketMs)`;
 * and the rate-limit reading of the last answer it had from that model, when it had one
 * ({@link encodeReading}).
 *
 * @example
 * ```ts
 * const usage: PublishedUsage = { at: 1_700_000_000_000, bucketMs: 1000, models: { 'east:gpt-4o': [1_700_000_000, 120, 1] } };
 * ```
 */
export interface PublishedUsage {
  /** Epoch ms of the write (a later write replaces an earlier one, never the reverse). */
  at: number;
  /** ms per bucket; 0 = a single bucket that never ages (no window). */
  bucketMs: number;
  models: Record<string, number[]>;
  /** Per model field, the last answer's reading as {@link encodeReading} writes it. */
  readings?: Record<string, number[]>;
}

/** The limits of a reading, in the order {@link encodeReading} writes them. */
const READ_LIMITS = ['tokens', 'requests', 'input', 'output'] as const;
/** How many numbers {@link encodeReading} writes. */
export const READING_LENGTH = 5 + 2 * READ_LIMITS.length;

/**
 * A {@link SharedReading} as a flat array: `[sentAt, at, tokens charged, tokensEnd, requestsEnd,
 * tokens limit, tokens remaining, requests limit, requests remaining, input ..., output ...]`, -1
 * where the answer did not say.
 *
 * @example
 * ```ts
 * encodeReading({ sentAt: 5, at: 9, tokens: 30, tokensEnd: 0, requestsEnd: 0, reading: { tokens: { remaining: 70 } } });
 * // [5, 9, 30, 0, 0, -1, 70, -1, -1, -1, -1, -1, -1]
 * ```
 */
export function encodeReading(r: SharedReading): number[] {
  const flat = [r.sentAt, r.at, r.tokens, r.tokensEnd, r.requestsEnd];
  for (const what of READ_LIMITS) {
    const l = r.reading[what];
    flat.push(l?.limit ?? -1, l?.remaining ?? -1);
  }
  return flat;
}

/**
 * Reads what {@link encodeReading} wrote; `undefined` for anything else.
 *
 * @example
 * ```ts
 * decodeReading([5, 9, 30, 0, 0, -1, 70, -1, -1, -1, -1, -1, -1]);
 * // { sentAt: 5, at: 9, tokens: 30, tokensEnd: 0, requestsEnd: 0, reading: { tokens: { remaining: 70 } } }
 * ```
 */
export function decodeReading(flat: unknown): SharedReading | undefined {
  if (!Array.isArray(flat) || flat.length !== READING_LENGTH) return undefined;
  if (!flat.every((n) => typeof n === 'number' && Number.isFinite(n))) return undefined;
  const v = flat as number[];
  const reading: RateLimitReading = {};
  READ_LIMITS.forEach((what, k) => {
    const limit = v[5 + 2 * k]!;
    const remaining = v[6 + 2 * k]!;
    if (limit < 0 && remaining < 0) return;
    const l: ReportedLimit = {};
    if (limit >= 0) l.limit = limit;
    if (remaining >= 0) l.remaining = remaining;
    reading[what] = l;
  });
  return { sentAt: v[0]!, at: v[1]!, tokens: v[2]!, tokensEnd: v[3]!, requestsEnd: v[4]!, reading };
}

/**
 * The wire form of {@link PublishedUsage}: `<at> <json>`, so that the script reads the write time
 * without parsing JSON.
 *
 * @example
 * ```ts
 * encodeUsage({ at: 5, bucketMs: 1000, models: {} }); // '5 {"b":1000,"m":{}}'
 * ```
 */
export function encodeUsage(u: PublishedUsage): string {
  const body =
    u.readings === undefined
      ? { b: u.bucketMs, m: u.models }
      : { b: u.bucketMs, m: u.models, r: u.readings };
  return `${Math.floor(u.at)} ${JSON.stringify(body)}`;
}

/**
 * Reads what {@link encodeUsage} wrote; `undefined` for anything else (a value from an older
 * version of the store, or garbage), which is then ignored.
 *
 * @example
 * ```ts
 * decodeUsage('5 {"b":1000,"m":{}}'); // { at: 5, bucketMs: 1000, models: {} }
 * ```
 */
export function decodeUsage(value: string): PublishedUsage | undefined {
  const space = value.indexOf(' ');
  if (space <= 0) return undefined;
  try {
    const body = JSON.parse(value.slice(space + 1)) as { b?: unknown; m?: unknown; r?: unknown };
    if (typeof body.b !== 'number' || typeof body.m !== 'object' || body.m === null) {
      return undefined;
    }
    const usage: PublishedUsage = {
      at: Number(value.slice(0, space)),
      bucketMs: body.b,
      models: body.m as Record<string, number[]>,
    };
    if (typeof body.r === 'object' && body.r !== null) {
      usage.readings = body.r as Record<string, number[]>;
    }
    return usage;
  } catch {
    return undefined;
  }
}

/**
 * A model's own buckets (epoch-aligned, `start` a multiple of `bucketMs`; 0 = one bucket that
 * never ages) as the flat triples of {@link PublishedUsage}, `merge` consecutive buckets to one:
 * published bucket `i` covers `[i * bucketMs * merge, (i + 1) * bucketMs * merge)`.
 *
 * @example
 * ```ts
 * publishBuckets([{ start: 1000, tokens: 5, requests: 1 }, { start: 1500, tokens: 7, requests: 1 }], 500, 2);
 * // [1, 12, 2]
 * ```
 */
export function publishBuckets(
  buckets: Iterable<{ start: number; tokens: number; requests: number }>,
  bucketMs: number,
  merge = 1,
): number[] {
  const flat: number[] = [];
  for (const b of buckets) {
    if (b.tokens === 0 && b.requests === 0) continue;
    // Starts are multiples of bucketMs up to float error: count in bucket numbers.
    const index = bucketMs > 0 ? Math.floor(Math.round(b.start / bucketMs) / merge) : 0;
    const n = flat.length;
    if (n >= 3 && flat[n - 3] === index) {
      flat[n - 2]! += b.tokens;
      flat[n - 1]! += b.requests;
    } else flat.push(index, b.tokens, b.requests);
  }
  return flat;
}

/**
 * Adds up, per model field, the usage that `others` published over the window `(now - windowMs,
 * now]`: every bucket that overlaps it counts whole (at most one bucket more than the window,
 * never less, as the local sliding window counts). `recentRequests` are the requests of the
 * buckets that overlap the newest sixth, which Azure limits to `rpm / 6`; `spans` the same
 * buckets by send time. With no window, every bucket counts (and none is recent).
 *
 * @example
 * ```ts
 * sumOthers([decodeUsage(v)!], Date.now(), 60_000);
 * // Map { 'east:gpt-4o' => { tokens: 120, requests: 1, recentRequests: 1, spans: [t, t + 1000, 120, 1] } }
 * ```
 */
export function sumOthers(
  others: readonly PublishedUsage[],
  now: number,
  windowMs: number,
): Map<string, PeerUsage> {
  // Built up here, handed out as what it is: the peers' usage of each model.
  const sums = new Map<string, Required<PeerUsage> & { spans: number[] }>();
  const from = now - windowMs;
  const recentFrom = now - windowMs / 6;
  for (const o of others) {
    const aging = windowMs > 0 && o.bucketMs > 0;
    for (const field of Object.keys(o.models)) {
      const flat = o.models[field]!;
      let sum = sums.get(field);
      if (sum === undefined) {
        sum = { tokens: 0, requests: 0, recentRequests: 0, spans: [] };
        sums.set(field, sum);
      }
      for (let i = 0; i + 2 < flat.length; i += 3) {
        const start = flat[i]! * o.bucketMs;
        const end = (flat[i]! + 1) * o.bucketMs;
        if (aging && end <= from) continue;
        const tokens = flat[i + 1]!;
        const requests = flat[i + 2]!;
        sum.tokens += tokens;
        sum.requests += requests;
        if (aging && end > recentFrom) sum.recentRequests += requests;
        // Without a window, usage has no send time that matters: it never ages.
        if (aging) sum.spans.push(start, end, tokens, requests);
      }
    }
  }
  for (const sum of sums.values()) sum.spans = mergeSpans(sum.spans);
  return sums;
}

/** Quadruples `[start, end, tokens, requests]` sorted by start, those of the same span added. */
function mergeSpans(spans: number[]): number[] {
  const n = spans.length / 4;
  if (n <= 1) return spans;
  const order = Array.from({ length: n }, (_, k) => k).sort(
    (a, b) => spans[4 * a]! - spans[4 * b]! || spans[4 * a + 1]! - spans[4 * b + 1]!,
  );
  const out: number[] = [];
  for (const k of order) {
    const i = 4 * k;
    const m = out.length;
    if (m >= 4 && out[m - 4] === spans[i] && out[m - 3] === spans[i + 1]) {
      out[m - 2]! += spans[i + 2]!;
      out[m - 1]! += spans[i + 3]!;
    } else out.push(spans[i]!, spans[i + 1]!, spans[i + 2]!, spans[i + 3]!);
  }
  return out;
}

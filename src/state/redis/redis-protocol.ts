import type { SharedReading } from '../../quota/reading';
import type { RateLimitReading, ReportedLimit } from '../../quota/rate-limit-headers';

/**
 * The one script a sync runs: publish cooldown changes, write this instance's usage and read the
 * others', refresh sessions, write the stored responses not written yet, read the cooldowns in
 * force. One round trip, atomic.
 *
 * KEYS: [cooldowns hash, usage hash, ...session keys, ...response keys]
 * ARGV: [instance id, now ms, nOps, session ttl ms, usage ttl ms, stale before (epoch ms),
 *        own usage ('' = do not write), response ttl ms, nSessions,
 *        ...ops (field, until; until 0 = mark-up), ...session values, ...response values]
 * Returns [[usage of every other instance], [field, until, ...] cooling now].
 *
 * The usage hash holds one field per instance: the instance's own usage per epoch-aligned bucket
 * (see {@link encodeUsage}), written whole each time, never incremented. A retried or replayed
 * write cannot double count, a refund cannot take anything below zero, and a write older than the
 * one in place is dropped. Readers sum the buckets in their own sliding window, so an instance that
 * stops writing ages out by itself; its field is deleted once it is older than `stale before`.
 *
 * @internal
 */
export const SYNC_SCRIPT = `
local id = ARGV[1]
local now = tonumber(ARGV[2])
local nOps = tonumber(ARGV[3])
local ttl = ARGV[4]
local usageTtl = ARGV[5]
local staleBefore = tonumber(ARGV[6])
local own = ARGV[7]
local responseTtl = ARGV[8]
local nSessions = tonumber(ARGV[9])
local a = 10
local cd = KEYS[1]
local uk = KEYS[2]
for i = 1, nOps do
  local field, untilMs = ARGV[a], tonumber(ARGV[a + 1])
  if untilMs == 0 then
    redis.call('HDEL', cd, field)
  elseif untilMs > now and untilMs > tonumber(redis.call('HGET', cd, field) or '0') then
    redis.call('HSET', cd, field, ARGV[a + 1])
  end
  a = a + 2
end
if own ~= '' then
  local prev = redis.call('HGET', uk, id)
  if not prev or tonumber(string.match(own, '^%d+')) >= tonumber(string.match(prev, '^%d+') or '0') then
    redis.call('HSET', uk, id, own)
  end
  redis.call('PEXPIRE', uk, usageTtl)
end
local others = {}
local all = redis.call('HGETALL', uk)
for j = 1, #all, 2 do
  if all[j] ~= id then
    if (tonumber(string.match(all[j + 1], '^%d+') or '0')) < staleBefore then
      redis.call('HDEL', uk, all[j])
    else
      others[#others + 1] = all[j + 1]
    end
  end
end
for k = 3, #KEYS do
  redis.call('SET', KEYS[k], ARGV[a], 'PX', k - 2 <= nSessions and ttl or responseTtl)
  a = a + 1
end
local cooling = {}
all = redis.call('HGETALL', cd)
for j = 1, #all, 2 do
  if tonumber(all[j + 1]) <= now then
    redis.call('HDEL', cd, all[j])
  else
    cooling[#cooling + 1] = all[j]
    cooling[#cooling + 1] = all[j + 1]
  end
end
return { others, cooling }
`;

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
  if (!Array.isArray(flat) || flat.length !== 5 + 2 * READ_LIMITS.length) return undefined;
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
 * Of the readings `others` published for one model field, the one of the latest call sent.
 *
 * @example
 * ```ts
 * newestReading(reply.others, 'east:gpt-4o')?.sentAt;
 * ```
 */
export function newestReading(
  others: readonly PublishedUsage[],
  field: string,
): SharedReading | undefined {
  let newest: SharedReading | undefined;
  for (const o of others) {
    const flat = o.readings?.[field];
    if (flat === undefined) continue;
    const r = decodeReading(flat);
    if (r !== undefined && (newest === undefined || r.sentAt > newest.sentAt)) newest = r;
  }
  return newest;
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

/** The others' usage of one model, as {@link sumOthers} adds it up. */
export interface OthersUsage {
  tokens: number;
  requests: number;
  recentRequests: number;
  /**
   * The same usage by when it was sent: `[start, end, tokens, requests, ...]` (epoch ms) per
   * bucket, oldest first, the others' buckets of the same span added together.
   */
  spans: number[];
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
): Map<string, OthersUsage> {
  const sums = new Map<string, OthersUsage>();
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

/**
 * What one sync sends: cooldown changes (`until` 0 = mark-up), this instance's usage (omitted
 * for a sync that only publishes cooldowns), session assignments to refresh, stored responses'
 * deployments to write.
 *
 * @example
 * ```ts
 * const request: SyncRequest = { id: 'a1b2', now: Date.now(), usageTtl: 120_000, staleBefore: Date.now() - 120_000,
 *   cooldowns: new Map([['east:gpt-4o', Date.now() + 10_000]]), sessions: [], sessionTtl: 3_600_000 };
 * ```
 */
export interface SyncRequest {
  id: string;
  now: number;
  cooldowns: ReadonlyMap<string, number>;
  usage?: PublishedUsage;
  /** ms the usage hash lives after the last write. */
  usageTtl: number;
  /** Others' usage written before this (epoch ms) is deleted. */
  staleBefore: number;
  sessions: ReadonlyArray<{ key: string; deployment: string }>;
  sessionTtl: number;
  /** Stored responses whose deployment is to be written (those an immediate write missed). */
  responses?: ReadonlyArray<{ key: string; deployment: string }>;
  /** ms a response key lives after it is written; required with `responses`. */
  responseTtl?: number;
}

/**
 * What a sync answers: every other instance's published usage, and the cooldowns in force.
 *
 * @example
 * ```ts
 * const reply: SyncReply = { others: [], cooling: [['east:gpt-4o', 1_700_000_010_000]] };
 * ```
 */
export interface SyncReply {
  others: PublishedUsage[];
  cooling: Array<[field: string, until: number]>;
}

/**
 * The keys and arguments of {@link SYNC_SCRIPT} for one sync.
 *
 * @example
 * ```ts
 * const { keys, args } = syncCommand('switchboard:', request);
 * await client.eval(SYNC_SCRIPT, keys.length, ...keys, ...args);
 * ```
 */
export function syncCommand(
  prefix: string,
  r: SyncRequest,
): { keys: string[]; args: (string | number)[] } {
  const keys: string[] = [`${prefix}cooldowns`, `${prefix}usage`];
  const args: (string | number)[] = [
    r.id,
    r.now,
    r.cooldowns.size,
    r.sessionTtl,
    Math.max(1, Math.ceil(r.usageTtl)),
    r.staleBefore,
    r.usage === undefined ? '' : encodeUsage(r.usage),
    Math.max(1, Math.ceil(r.responseTtl ?? 1)),
    r.sessions.length,
  ];
  for (const [field, until] of r.cooldowns) args.push(field, until);
  for (const s of [...r.sessions, ...(r.responses ?? [])]) {
    keys.push(s.key);
    args.push(s.deployment);
  }
  return { keys, args };
}

/**
 * Reads {@link SYNC_SCRIPT}'s answer.
 *
 * @example
 * ```ts
 * parseSyncReply([['5 {"b":1000,"m":{}}'], ['east:gpt-4o', '1700000010000']]);
 * // { others: [{ at: 5, bucketMs: 1000, models: {} }], cooling: [['east:gpt-4o', 1700000010000]] }
 * ```
 */
export function parseSyncReply(reply: unknown): SyncReply {
  const [usage, cooling] = reply as [unknown[], unknown[]];
  const others: PublishedUsage[] = [];
  for (const value of usage) {
    const decoded = decodeUsage(String(value));
    if (decoded !== undefined) others.push(decoded);
  }
  const out: SyncReply['cooling'] = [];
  for (let j = 0; j + 1 < cooling.length; j += 2) {
    out.push([String(cooling[j]), Number(cooling[j + 1])]);
  }
  return { others, cooling: out };
}

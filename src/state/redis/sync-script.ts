import { DEFAULT_MAX_COOLDOWN } from '../../runtime/upstream-numbers';
import { encodeUsage, type PublishedUsage } from './redis-protocol';

/**
 * The one script a sync runs: publish cooldown changes, write this instance's usage and read the
 * others', refresh sessions, write the stored responses not written yet, read the cooldowns in
 * force. One round trip, atomic.
 *
 * KEYS: [cooldowns hash, usage hash, ...session keys, ...response keys]
 * ARGV: [instance id, now ms, nOps, session ttl ms, usage ttl ms, stale before (epoch ms),
 *        own usage ('' = do not write), response ttl ms, nSessions, clock skew ms,
 *        max cooldown ms, max usage fields, max cooldown fields, max value length,
 *        ...ops (field, until; until 0 = mark-up), ...session values, ...response values]
 * Returns [[usage of every other instance], [field, until, ...] cooling now, [what was skipped]].
 *
 * The usage hash holds one field per instance: the instance's own usage per epoch-aligned bucket
 * (see {@link encodeUsage}), written whole each time, never incremented. A retried or replayed
 * write cannot double count, a refund cannot take anything below zero, and a write older than the
 * one in place is dropped. Readers sum the buckets in their own sliding window, so an instance that
 * stops writing ages out by itself; its field is deleted once it is older than `stale before`.
 *
 * Anyone with write access may have put anything under the prefix, so the script never does
 * arithmetic on or compares a value it has not turned into a finite number, skips a key of the
 * wrong type (and says so in the third list) instead of failing, reads at most the given number of
 * fields and returns no value longer than the given length. A stored value that cannot be the
 * truth (a write time or a cooldown beyond the clock skew and the cap) does not block this
 * instance's own write. Everything it returns is still checked by the caller (`checkPeers`).
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
local skew = tonumber(ARGV[10])
local maxCooldown = tonumber(ARGV[11])
local maxUsageFields = tonumber(ARGV[12])
local maxCooldownFields = tonumber(ARGV[13])
local maxLen = tonumber(ARGV[14])
local a = 15
local cd = KEYS[1]
local uk = KEYS[2]
local skipped = {}
local function finite(x)
  return type(x) == 'number' and x == x and x ~= math.huge and x ~= -math.huge
end
local function num(v)
  local x = tonumber(v)
  if finite(x) then return x end
  return nil
end
local function stamp(v)
  if type(v) ~= 'string' then return nil end
  return num(string.match(v, '^%d+'))
end
local function usable(key, what)
  local t = redis.call('TYPE', key)['ok']
  if t == 'hash' or t == 'none' then return true end
  skipped[#skipped + 1] = what .. '-type:' .. t
  return false
end
local function fields(key, limit, what)
  if redis.call('HLEN', key) <= limit then return redis.call('HGETALL', key) end
  skipped[#skipped + 1] = what .. '-count'
  local out, cursor = {}, '0'
  repeat
    local r = redis.call('HSCAN', key, cursor, 'COUNT', 100)
    cursor = r[1]
    for k = 1, #r[2] do out[#out + 1] = r[2][k] end
  until cursor == '0' or #out >= 2 * limit
  return out
end
local cdOk = usable(cd, 'cooldowns')
local ukOk = usable(uk, 'usage')
local latest = now + maxCooldown + skew
for i = 1, nOps do
  local field, untilMs = ARGV[a], tonumber(ARGV[a + 1])
  if cdOk then
    if untilMs == 0 then
      redis.call('HDEL', cd, field)
    elseif untilMs > now then
      local cur = num(redis.call('HGET', cd, field))
      if cur == nil or cur <= now or cur > latest or untilMs > cur then
        redis.call('HSET', cd, field, ARGV[a + 1])
        local left = math.ceil(math.min(untilMs, latest) - now)
        if redis.call('PTTL', cd) < left then redis.call('PEXPIRE', cd, left) end
      end
    end
  end
  a = a + 2
end
if own ~= '' and ukOk then
  local prev = stamp(redis.call('HGET', uk, id))
  if prev == nil or prev > now + skew or stamp(own) >= prev then
    redis.call('HSET', uk, id, own)
  end
  redis.call('PEXPIRE', uk, usageTtl)
end
local others = {}
if ukOk then
  local all = fields(uk, maxUsageFields, 'usage')
  for j = 1, #all, 2 do
    local f, v = all[j], all[j + 1]
    if f ~= id then
      local at = stamp(v)
      if at ~= nil and at < staleBefore then
        redis.call('HDEL', uk, f)
      elseif #v > maxLen or #f > 1024 then
        skipped[#skipped + 1] = 'usage-length'
      else
        others[#others + 1] = v
      end
    end
  end
end
for k = 3, #KEYS do
  redis.call('SET', KEYS[k], ARGV[a], 'PX', k - 2 <= nSessions and ttl or responseTtl)
  a = a + 1
end
local cooling = {}
if cdOk then
  local all = fields(cd, maxCooldownFields, 'cooldowns')
  for j = 1, #all, 2 do
    local f, v = all[j], all[j + 1]
    local u = num(v)
    if u ~= nil and u <= now then
      redis.call('HDEL', cd, f)
    elseif #v > 32 or #f > 1024 then
      skipped[#skipped + 1] = 'cooldowns-length'
    else
      cooling[#cooling + 1] = f
      cooling[#cooling + 1] = v
    end
  end
  if redis.call('PTTL', cd) == -1 then redis.call('PEXPIRE', cd, maxCooldown + skew) end
end
return { others, cooling, skipped }
`;

/** How far another machine's clock may run ahead of this one's, by default (ms). */
export const DEFAULT_SKEW = 5_000;

/**
 * What one sync sends: cooldown changes (`until` 0 = mark-up), this instance's usage (omitted
 * for a sync that only publishes cooldowns), session assignments to refresh, stored responses'
 * deployments to write, and the bounds of what it reads back.
 *
 * @example
 * ```ts
 * const request: SyncRequest = { id: 'a1b2', now: Date.now(), usageTtl: 120_000, staleBefore: Date.now() - 120_000,
 *   cooldowns: new Map([['east:gpt-4o', Date.now() + 10_000]]), sessions: [], sessionTtl: 3_600_000 };
 * ```
 */
interface SyncRequest {
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
  /** How far another clock may run ahead (ms); default {@link DEFAULT_SKEW}. */
  skew?: number;
  /** The longest cooldown (ms); default {@link DEFAULT_MAX_COOLDOWN}. */
  maxCooldown?: number;
  /** Most usage fields read (instances); default 1024. */
  maxUsageFields?: number;
  /** Most cooldown fields read; default 1024. */
  maxCooldownFields?: number;
  /** Longest usage value read (characters); default 1 MiB. */
  maxValueLength?: number;
}

/**
 * What a sync answers, as read and not checked yet: every other instance's published usage
 * (`<at> <json>`, see {@link encodeUsage}), the cooldowns in the store, and what the script
 * skipped (`usage-type:string`: the usage key holds a string; `usage-count`: too many fields;
 * `usage-length`: a value too long; the same for `cooldowns`).
 *
 * @example
 * ```ts
 * const raw: RawSyncReply = { usage: ['5 {"b":1000,"m":{}}'], cooling: [['east:gpt-4o', '1700000010000']], skipped: [] };
 * ```
 */
export interface RawSyncReply {
  usage: string[];
  cooling: Array<[field: string, until: string]>;
  skipped: string[];
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
    Math.max(0, Math.ceil(r.skew ?? DEFAULT_SKEW)),
    Math.max(1, Math.ceil(r.maxCooldown ?? DEFAULT_MAX_COOLDOWN)),
    r.maxUsageFields ?? 1024,
    r.maxCooldownFields ?? 1024,
    r.maxValueLength ?? 1 << 20,
  ];
  for (const [field, until] of r.cooldowns) args.push(field, until);
  for (const s of [...r.sessions, ...(r.responses ?? [])]) {
    keys.push(s.key);
    args.push(s.deployment);
  }
  return { keys, args };
}

/**
 * Reads {@link SYNC_SCRIPT}'s answer as it came, without judging the values; anything that is
 * not a string where one is expected is left out.
 *
 * @example
 * ```ts
 * readSyncReply([['5 {"b":1000,"m":{}}'], ['east:gpt-4o', '1700000010000'], []]);
 * // { usage: ['5 {"b":1000,"m":{}}'], cooling: [['east:gpt-4o', '1700000010000']], skipped: [] }
 * ```
 */
export function readSyncReply(reply: unknown): RawSyncReply {
  const [usage, cooling, skipped] = Array.isArray(reply) ? (reply as unknown[]) : [];
  const strings = (list: unknown): string[] =>
    Array.isArray(list) ? list.filter((v): v is string => typeof v === 'string') : [];
  const flat = Array.isArray(cooling) ? (cooling as unknown[]) : [];
  const pairs: RawSyncReply['cooling'] = [];
  for (let j = 0; j + 1 < flat.length; j += 2) {
    const field = flat[j];
    const until = flat[j + 1];
    if (typeof field === 'string' && typeof until === 'string') pairs.push([field, until]);
  }
  return { usage: strings(usage), cooling: pairs, skipped: strings(skipped) };
}

/**
 * The one script a sync runs: publish cooldown changes, write this instance's usage and read the
 * others', refresh sessions, read the cooldowns in force. One round trip, atomic.
 *
 * KEYS: [cooldowns hash, ...usage hashes (nUsage), ...session keys]
 * ARGV: [instance id, usage PEXPIREAT, now ms, nUsage, nOps, session ttl ms,
 *        ...ops (field, until; until 0 = mark-up), ...usage (tokens, requests), ...session values]
 * Returns [[othersTokens, othersRequests, ...] per usage key, [field, until, ...] cooling now].
 *
 * Each instance writes its own absolute usage of the window under its own fields (`t:<id>`,
 * `r:<id>`), never an increment: a retried or replayed write cannot double count, and a refund
 * cannot take a total below zero, because an instance's own usage never goes below zero.
 *
 * @internal
 */
export const SYNC_SCRIPT = `
local id = ARGV[1]
local expireAt = ARGV[2]
local now = tonumber(ARGV[3])
local nUsage = tonumber(ARGV[4])
local nOps = tonumber(ARGV[5])
local ttl = ARGV[6]
local a = 7
local cd = KEYS[1]
for i = 1, nOps do
  local field, untilMs = ARGV[a], tonumber(ARGV[a + 1])
  if untilMs == 0 then
    redis.call('HDEL', cd, field)
  elseif untilMs > now and untilMs > tonumber(redis.call('HGET', cd, field) or '0') then
    redis.call('HSET', cd, field, ARGV[a + 1])
  end
  a = a + 2
end
local tf, rf = 't:' .. id, 'r:' .. id
local usage = {}
for k = 2, nUsage + 1 do
  local key = KEYS[k]
  local t, r = ARGV[a], ARGV[a + 1]
  a = a + 2
  if t == '0' and r == '0' then
    redis.call('HDEL', key, tf, rf)
  else
    redis.call('HSET', key, tf, t, rf, r)
    redis.call('PEXPIREAT', key, expireAt)
  end
  local ot, orq = 0, 0
  local all = redis.call('HGETALL', key)
  for j = 1, #all, 2 do
    local f = all[j]
    if f ~= tf and f ~= rf then
      if string.byte(f, 1) == 116 then ot = ot + tonumber(all[j + 1]) else orq = orq + tonumber(all[j + 1]) end
    end
  end
  usage[#usage + 1] = ot
  usage[#usage + 1] = orq
end
for k = nUsage + 2, #KEYS do
  redis.call('SET', KEYS[k], ARGV[a], 'PX', ttl)
  a = a + 1
end
local cooling = {}
local all = redis.call('HGETALL', cd)
for j = 1, #all, 2 do
  if tonumber(all[j + 1]) <= now then
    redis.call('HDEL', cd, all[j])
  else
    cooling[#cooling + 1] = all[j]
    cooling[#cooling + 1] = all[j + 1]
  end
end
return { usage, cooling }
`;

/** One model's usage as this instance publishes it, under its usage key. */
export interface UsageWrite {
  key: string;
  tokens: number;
  requests: number;
}

/**
 * What one sync sends: cooldown changes (`until` 0 = mark-up), this instance's usage, session
 * assignments to refresh.
 *
 * @example
 * ```ts
 * const request: SyncRequest = { id: 'a1b2', now: Date.now(), expireAt: Date.now() + 120_000,
 *   cooldowns: new Map([['east:gpt-4o', Date.now() + 10_000]]), usage: [], sessions: [], sessionTtl: 3_600_000 };
 * ```
 */
export interface SyncRequest {
  id: string;
  now: number;
  /** Epoch ms at which the usage keys written expire. */
  expireAt: number;
  cooldowns: ReadonlyMap<string, number>;
  usage: readonly UsageWrite[];
  sessions: ReadonlyArray<{ key: string; deployment: string }>;
  sessionTtl: number;
}

/**
 * What a sync answers: the others' usage (in the order of {@link SyncRequest.usage}) and the
 * cooldowns in force, by field.
 *
 * @example
 * ```ts
 * const reply: SyncReply = { others: [{ tokens: 120, requests: 2 }], cooling: [['east:gpt-4o', 1_700_000_010_000]] };
 * ```
 */
export interface SyncReply {
  others: Array<{ tokens: number; requests: number }>;
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
  const keys: string[] = [`${prefix}cooldowns`];
  const args: (string | number)[] = [
    r.id,
    r.expireAt,
    r.now,
    r.usage.length,
    r.cooldowns.size,
    r.sessionTtl,
  ];
  for (const [field, until] of r.cooldowns) args.push(field, until);
  for (const u of r.usage) {
    keys.push(u.key);
    args.push(Math.round(u.tokens), Math.round(u.requests));
  }
  for (const s of r.sessions) {
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
 * parseSyncReply([[120, 2], ['east:gpt-4o', '1700000010000']]);
 * // { others: [{ tokens: 120, requests: 2 }], cooling: [['east:gpt-4o', 1700000010000]] }
 * ```
 */
export function parseSyncReply(reply: unknown): SyncReply {
  const [usage, cooling] = reply as [unknown[], unknown[]];
  const others: SyncReply['others'] = [];
  for (let i = 0; i + 1 < usage.length; i += 2) {
    others.push({ tokens: Number(usage[i]), requests: Number(usage[i + 1]) });
  }
  const out: SyncReply['cooling'] = [];
  for (let j = 0; j + 1 < cooling.length; j += 2) {
    out.push([String(cooling[j]), Number(cooling[j + 1])]);
  }
  return { others, cooling: out };
}

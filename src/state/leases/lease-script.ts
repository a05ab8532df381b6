/**
 * What one meter of a limit asks the store for in one lease exchange.
 *
 * @example
 * ```ts
 * const ask: MeterAsk = { meter: 'tokens', kind: 'w', limit: 60_000, lengthMs: 60_000, need: 1_456,
 *   share: 0.05, give: 0, leaseEnd: 0, hint: 0, read: -1, held: 0 };
 * ```
 */
export interface MeterAsk {
  /** Which meter: `tokens`, `requests`, `input`, `output`. */
  meter: string;
  /** `w`: a fixed window that forgets all at its end (Azure OpenAI); `b`: a token bucket. */
  kind: 'w' | 'b';
  /** The limit per window, or the bucket's capacity. */
  limit: number;
  /** The window's length, or the time the bucket takes to refill from empty (ms). */
  lengthMs: number;
  /** The least worth granting (one call's charge); 0: take nothing, only give back or read. */
  need: number;
  /** Fraction of the room left that a lease takes, when that is more than `need`. */
  share: number;
  /** Handed back (> 0), or spent beyond what was granted (< 0, a debt). */
  give: number;
  /** The window a part handed back was granted in (its end, epoch ms); 0 for a bucket. */
  leaseEnd: number;
  /** When the upstream's window ends, as its last answer said (epoch ms); 0: not known. */
  hint: number;
  /**
   * A reading of the upstream, -1 when none: for a window, what it had counted in the window
   * that ends at `hint`; for a bucket, what it has left now (its remaining, refilled since).
   */
  read: number;
  /**
   * For a bucket: what this replica still holds that the upstream has not charged yet (its
   * lease's balance after `give`, and the calls it sent that are not answered). The store's
   * bucket never refills into what the replicas hold. 0 for a window.
   */
  held: number;
}

/** What the store granted one meter. */
export interface MeterGrant {
  /** Granted now (0: the room left was below `need`). */
  grant: number;
  /** For a window: when it ends (epoch ms); the lease ends with it. 0 for a bucket. */
  end: number;
  /** Room left in the store after the grant (what the others may still take). */
  room: number;
}

/** What one exchange brought back, checked. */
export interface LeaseReply {
  /** Replicas that exchanged within the peer TTL, this one included; undefined when not counted. */
  peers: number | undefined;
  grants: MeterGrant[];
  /** A stored field that was not a number, skipped (the first one). */
  bad: string | undefined;
}

/** Numbers per meter in ARGV. */
const PER_METER = 11;

/**
 * The lease exchange: for each meter of one limit holder (a model on a deployment, or a quota
 * pool), take back what a replica hands back, correct the count by a reading of the upstream,
 * then grant a share of the room left, or nothing when less than `need` is left. Atomic, so the
 * grants of all replicas together never exceed the limit in a window (or what a bucket holds).
 * It also notes the replica in the peers hash and counts the replicas seen lately.
 *
 * KEYS: [lease hash, peers hash]. ARGV: [now, replica id, peer ttl ms, skew ms, meters,
 * ...per meter: name, kind, limit, length, need, share, give, lease end, hint, read, held].
 * Returns [peers (-1: not counted), bad count, first bad field, ...per meter: grant, end, room].
 *
 * Per meter the hash holds `<meter>:a` (a window's end, or a bucket's last refill time) and
 * `<meter>:b` (what a window granted, or what a bucket holds). A bucket also holds, per replica,
 * `<meter>:h:<id>`: what that replica held at its last exchange, plus what it was granted then;
 * `t:<id>` is when that was. A bucket lent out is not refilled: the upstream's bucket stops at
 * its capacity while what the replicas hold is still to be charged to it, so the store's room
 * stays at most the capacity less what is held (a replica's part expires with the peer TTL). A
 * field that is not a finite number is skipped (taken as absent) and reported; a value out of
 * range is clamped to the safe side (a window granted more than its limit counts as full).
 *
 * @internal
 */
export const LEASE_SCRIPT = `
local now = tonumber(ARGV[1])
local id = ARGV[2]
local peerTtl = tonumber(ARGV[3])
local skew = tonumber(ARGV[4])
local count = tonumber(ARGV[5])
local key = KEYS[1]
local bad, badField = 0, ''
-- A key of another type was not written by a lease exchange: it is replaced, and reported.
if redis.call('EXISTS', key) == 1 and redis.call('TYPE', key).ok ~= 'hash' then
  redis.call('DEL', key)
  bad, badField = 1, '(a key of another type)'
end
local function num(v)
  local x = tonumber(v)
  if type(x) == 'number' and x == x and x ~= math.huge and x ~= -math.huge then return x end
  return nil
end
-- What the other replicas seen within the peer TTL hold of each bucket; older parts are dropped.
local heldBy, seen, parts = {}, {}, {}
local all = redis.call('HGETALL', key)
for k = 1, #all, 2 do
  local rid = string.match(all[k], '^t:(.+)$')
  if rid then seen[rid] = num(all[k + 1]) or 0 end
end
for k = 1, #all, 2 do
  local f = all[k]
  local hm, rid = string.match(f, '^(.-):h:(.+)$')
  if hm then
    local v, t = num(all[k + 1]), seen[rid]
    if v == nil then
      bad = bad + 1
      if badField == '' then badField = f end
      redis.call('HDEL', key, f)
    elseif t == nil or t <= now - peerTtl then
      redis.call('HDEL', key, f)
    elseif rid ~= id then
      heldBy[hm] = (heldBy[hm] or 0) + math.max(0, v)
    end
  else
    local rid2 = string.match(f, '^t:(.+)$')
    if rid2 and rid2 ~= id and (seen[rid2] or 0) <= now - peerTtl then redis.call('HDEL', key, f) end
  end
end
redis.call('HSET', key, 't:' .. id, now)
local out = {}
local ttl = 1000
for i = 0, count - 1 do
  local j = 6 + i * ${PER_METER}
  local m, kind = ARGV[j], ARGV[j + 1]
  local limit, len = tonumber(ARGV[j + 2]), tonumber(ARGV[j + 3])
  local need, share, give = tonumber(ARGV[j + 4]), tonumber(ARGV[j + 5]), tonumber(ARGV[j + 6])
  local leaseEnd, hint, read = tonumber(ARGV[j + 7]), tonumber(ARGV[j + 8]), tonumber(ARGV[j + 9])
  local held = math.max(0, tonumber(ARGV[j + 10]))
  local fa, fb = m .. ':a', m .. ':b'
  local raw = redis.call('HMGET', key, fa, fb)
  local x, y = num(raw[1]), num(raw[2])
  if (raw[1] and x == nil) or (raw[2] and y == nil) then
    bad = bad + 1
    if badField == '' then badField = (raw[1] and x == nil) and fa or fb end
  end
  local grant, room, fin = 0, 0, 0
  if kind == 'w' then
    local e, u = x or 0, y or 0
    if e > now + len + skew then e = now + len end
    if u < 0 then u = 0 end
    if u > limit then u = limit end
    if now >= e then
      if hint > now and hint <= now + len + skew then e = hint else e = now + len end
      u = 0
    elseif hint > e and hint <= now + len + skew then
      e = hint
    end
    if give > 0 and leaseEnd == e then u = math.max(0, u - give) elseif give < 0 then u = u - give end
    if read >= 0 and hint == e and read > u then u = read end
    room = limit - u
    if need > 0 and room >= need then
      grant = math.max(need, math.floor(share * room))
      if grant > room then grant = room end
      u = u + grant
    end
    room = limit - u
    fin = e
    redis.call('HSET', key, fa, e, fb, u)
    if e - now + len > ttl then ttl = e - now + len end
  else
    local t, l = x or now, y or limit
    if t > now + skew then t = now end
    if l > limit then l = limit end
    if l < -limit then l = -limit end
    if now > t then
      l = math.min(limit, l + (now - t) * limit / len)
      t = now
    end
    if give > 0 then l = math.min(limit, l + give) elseif give < 0 then l = l + give end
    if read >= 0 and read < l then l = read end
    local cap = limit - held - (heldBy[m] or 0)
    if l > cap then l = cap end
    room = l
    if need > 0 and room >= need then
      grant = math.max(need, math.floor(share * room))
      if grant > room then grant = room end
      l = l - grant
    end
    room = l
    redis.call('HSET', key, fa, t, fb, l, m .. ':h:' .. id, held + grant)
    if 2 * len > ttl then ttl = 2 * len end
  end
  out[#out + 1] = tostring(grant)
  out[#out + 1] = tostring(fin)
  out[#out + 1] = string.format('%.17g', room)
end
redis.call('PEXPIRE', key, math.ceil(ttl))
local peers = -1
if redis.call('TYPE', KEYS[2]).ok == 'hash' or redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('HSET', KEYS[2], id, now)
  redis.call('PEXPIRE', KEYS[2], 2 * peerTtl)
  if redis.call('HLEN', KEYS[2]) <= 1024 then
    peers = 0
    local all = redis.call('HGETALL', KEYS[2])
    for k = 1, #all, 2 do
      local t = num(all[k + 1])
      if t ~= nil and t > now - peerTtl and t <= now + skew then
        peers = peers + 1
      else
        redis.call('HDEL', KEYS[2], all[k])
      end
    end
  end
end
local reply = { peers, bad, badField }
for k = 1, #out do reply[#reply + 1] = out[k] end
return reply
`;

/**
 * The ARGV of {@link LEASE_SCRIPT} for `asks`.
 *
 * @example
 * ```ts
 * const args = leaseArgs({ now: Date.now(), id: 'a1b2', peerTtlMs: 10_000, skewMs: 5_000 }, asks);
 * ```
 */
export function leaseArgs(
  head: { now: number; id: string; peerTtlMs: number; skewMs: number },
  asks: readonly MeterAsk[],
): (string | number)[] {
  const args: (string | number)[] = [head.now, head.id, head.peerTtlMs, head.skewMs, asks.length];
  for (const a of asks) {
    args.push(a.meter, a.kind, a.limit, a.lengthMs, a.need, a.share, a.give);
    args.push(a.leaseEnd, a.hint, a.read, a.held);
  }
  return args;
}

/**
 * The script's reply, checked against what was asked: a grant is a whole number from 0 to the
 * room there was (never more than the limit), a window's end lies ahead within its length, the
 * room at most the limit. Anything else is not a reply of the script: `undefined`.
 *
 * @example
 * ```ts
 * const reply = readLeaseReply(await client.eval(LEASE_SCRIPT, 2, ...keys, ...args), asks, now);
 * ```
 */
export function readLeaseReply(
  reply: unknown,
  asks: readonly MeterAsk[],
  now: number,
  skewMs: number,
): LeaseReply | undefined {
  if (!Array.isArray(reply) || reply.length !== 3 + 3 * asks.length) return undefined;
  const values = reply as unknown[];
  const peers = Number(values[0]);
  const bad = Number(values[1]) > 0 ? String(values[2]).slice(0, 80) : undefined;
  const grants: MeterGrant[] = [];
  for (let i = 0; i < asks.length; i++) {
    const ask = asks[i]!;
    const grant = Number(values[3 + 3 * i]);
    const end = Number(values[4 + 3 * i]);
    const room = Number(values[5 + 3 * i]);
    if (!(grant >= 0 && grant <= ask.limit) || !Number.isFinite(room) || room > ask.limit) {
      return undefined;
    }
    if (ask.kind === 'w' && !(end > now - skewMs && end <= now + ask.lengthMs + skewMs)) {
      return undefined;
    }
    grants.push({ grant, end: ask.kind === 'w' ? end : 0, room });
  }
  return { peers: peers >= 1 && peers <= 1024 ? peers : undefined, grants, bad };
}

/**
 * The same exchange as {@link LEASE_SCRIPT}, in this process, for one meter kept here: what a
 * replica uses while the store cannot be reached, with its limit cut to its own part.
 *
 * @example
 * ```ts
 * const held = { a: 0, b: 0 };
 * localGrant(held, ask, Date.now()); // { grant: 3_000, end: …, room: 12_000 }
 * ```
 */
export function localGrant(held: { a: number; b: number }, ask: MeterAsk, now: number): MeterGrant {
  const { limit, lengthMs: len, need, share, give } = ask;
  const take = (room: number) =>
    need > 0 && room >= need ? Math.min(room, Math.max(need, Math.floor(share * room))) : 0;
  if (ask.kind === 'w') {
    const hint = ask.hint > now && ask.hint <= now + len ? ask.hint : 0;
    if (now >= held.a) {
      held.a = hint || now + len;
      held.b = 0;
    } else if (hint > held.a) {
      held.a = hint;
    }
    if (give > 0 && ask.leaseEnd === held.a) held.b = Math.max(0, held.b - give);
    else if (give < 0) held.b -= give;
    const grant = take(limit - held.b);
    held.b += grant;
    return { grant, end: held.a, room: limit - held.b };
  }
  if (now > held.a) {
    held.b = Math.min(limit, held.b + ((now - held.a) * limit) / len);
    held.a = now;
  }
  held.b = give > 0 ? Math.min(limit, held.b + give) : held.b + give;
  const grant = take(held.b);
  held.b -= grant;
  return { grant, end: 0, room: held.b };
}

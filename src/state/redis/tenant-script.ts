import { createHash } from 'node:crypto';
import { BUCKET_MS, WINDOW_BUCKETS } from '../minute-buckets';
import {
  dayOf,
  LocalTenantCounts,
  periodOf,
  type TenantCharge,
  type TenantCounts,
  type TenantLimitName,
  type TenantLimits,
  type TenantVerdict,
} from '../tenant-counts';
import { bounded, type RedisClientLike } from './redis-connection';

/**
 * Takes a call's charge from a tenant's counts in one atomic step, as {@link LocalTenantCounts}
 * does in a process: one hash per tenant, a field per minute bucket (`t<n>` tokens, `r<n>`
 * requests, one-second buckets, the 61 newest counted), per UTC day (`d<day>`) and per budget
 * period (`u<period>`). Fields that left their window are deleted; a value that is not a count
 * within its bound (another writer's) is deleted and reported, never counted.
 *
 * KEYS: the tenant's hash. ARGV: now, tpm, rpm, tokens per day, USD (0 = none), budget period
 * key ('' = none), its end, the charge's tokens, requests and USD, the largest count and USD a
 * field may hold.
 * Reply: { ok (1/0), limit, wait ms, used, bad fields, first bad field }.
 */
const TENANT_TAKE_SCRIPT = `
local now = tonumber(ARGV[1])
local tpm, rpm, tpd, usd = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local pkey, pend = ARGV[6], tonumber(ARGV[7])
local tokens, requests, cost = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local bound, usdBound = tonumber(ARGV[11]), tonumber(ARGV[12])
local b = math.floor(now / ${BUCKET_MS})
local day = math.floor(now / 86400000)
local pkind, pnum = string.sub(pkey, 1, 1), tonumber(string.sub(pkey, 2))
local raw = redis.call('HGETALL', KEYS[1])
local tb, rb = {}, {}
local usedT, usedR, usedD, usedU = 0, 0, 0, 0
local bad, badField = 0, ''
local gone = {}
for i = 1, #raw, 2 do
  local f = raw[i]
  local v = tonumber(raw[i + 1])
  local kind = string.sub(f, 1, 1)
  local rest = string.sub(f, 2)
  local n = tonumber(rest)
  local lim = bound
  if kind == 'u' then lim = usdBound end
  local ok = v ~= nil and v == v and v >= 0 and v <= lim
  if ok and (kind == 't' or kind == 'r') and n then
    if n <= b - ${WINDOW_BUCKETS} then gone[#gone + 1] = f
    elseif n <= b + 5 then
      if kind == 't' then usedT = usedT + v; tb[#tb + 1] = { n, v }
      else usedR = usedR + v; rb[#rb + 1] = { n, v } end
    else ok = false end
  elseif ok and kind == 'd' and n then
    if n == day then usedD = v elseif n < day then gone[#gone + 1] = f else ok = false end
  elseif ok and kind == 'u' then
    local k, m = string.sub(rest, 1, 1), tonumber(string.sub(rest, 2))
    if rest == pkey then usedU = v
    elseif m ~= nil and (k ~= pkind or pnum == nil or m < pnum) then gone[#gone + 1] = f
    elseif m == nil then ok = false end
  elseif ok then ok = false end
  if not ok then
    bad = bad + 1
    badField = f
    gone[#gone + 1] = f
  end
end
if #gone > 0 then redis.call('HDEL', KEYS[1], unpack(gone)) end
local function wait(list, excess)
  table.sort(list, function(x, y) return x[1] < y[1] end)
  local freed = 0
  for _, e in ipairs(list) do
    freed = freed + e[2]
    if freed >= excess - 1e-9 then return math.max(1, (e[1] + ${WINDOW_BUCKETS}) * ${BUCKET_MS} - now) end
  end
  return math.max(1, (b + ${WINDOW_BUCKETS}) * ${BUCKET_MS} - now)
end
if tpm > 0 and usedT + tokens > tpm then
  return { 0, 'tpm', tostring(wait(tb, usedT + tokens - tpm)), tostring(usedT), bad, badField }
end
if rpm > 0 and usedR + requests > rpm then
  return { 0, 'rpm', tostring(wait(rb, usedR + requests - rpm)), tostring(usedR), bad, badField }
end
if tpd > 0 and usedD + tokens > tpd then
  return { 0, 'tokensPerDay', tostring(math.max(1, (day + 1) * 86400000 - now)), tostring(usedD), bad, badField }
end
if usd > 0 and pkey ~= '' and usedU + cost > usd + 1e-12 then
  return { 0, 'budget', tostring(math.max(1, pend - now)), string.format('%.17g', usedU), bad, badField }
end
if tokens > 0 then redis.call('HINCRBYFLOAT', KEYS[1], 't' .. b, ARGV[8]) end
redis.call('HINCRBYFLOAT', KEYS[1], 'r' .. b, ARGV[9])
if tokens > 0 then redis.call('HINCRBYFLOAT', KEYS[1], 'd' .. day, ARGV[8]) end
if pkey ~= '' and cost > 0 then redis.call('HINCRBYFLOAT', KEYS[1], 'u' .. pkey, ARGV[10]) end
local ttl = 2 * 86400000
if pkey ~= '' and pend - now + 86400000 > ttl then ttl = pend - now + 86400000 end
redis.call('PEXPIRE', KEYS[1], math.floor(ttl))
return { 1, '', '0', '0', bad, badField }
`;

/**
 * Adds a settlement to the fields a call was taken into, where they still exist (a window or
 * period that moved on keeps what it counts now); a field never goes below 0.
 *
 * KEYS: the tenant's hash. ARGV: pairs of field and amount.
 */
const TENANT_ADJUST_SCRIPT = `
for i = 1, #ARGV, 2 do
  local f, d = ARGV[i], ARGV[i + 1]
  if redis.call('HEXISTS', KEYS[1], f) == 1 then
    local v = redis.pcall('HINCRBYFLOAT', KEYS[1], f, d)
    if type(v) ~= 'table' and tonumber(v) < 0 then redis.call('HSET', KEYS[1], f, '0') end
  end
end
return 1
`;

const LIMITS: ReadonlySet<string> = new Set<TenantLimitName>([
  'tpm',
  'rpm',
  'tokensPerDay',
  'budget',
]);
/** The longest wait a verdict may carry: to the end of a month, with room for skew. */
const MAX_WAIT = 32 * 86_400_000;

/**
 * What the store holds for `key` under `prefix`: `tenant:` and 32 hex digits of its SHA-256.
 *
 * @example
 * ```ts
 * tenantKey('switchboard:', 'acme'); // 'switchboard:tenant:' + 32 hex digits
 * ```
 */
export function tenantKey(prefix: string, key: string): string {
  // Hashed: a tenant id (a customer's name, a gateway key's tenant) never shows in key names.
  return `${prefix}tenant:${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 32)}`;
}

/**
 * The take script's reply, checked: a verdict, and the store's bad field when it held one.
 * Anything else is not a reply of the script: `undefined`.
 */
function readTakeReply(
  reply: unknown,
  limits: TenantLimits,
  now: number,
): { verdict: TenantVerdict; bad: string | undefined } | undefined {
  if (!Array.isArray(reply) || reply.length !== 6) return undefined;
  const [ok, limit, wait, used, bad, badField] = reply as unknown[];
  const badOut = Number(bad) > 0 ? String(badField).slice(0, 80) : undefined;
  if (ok === 1) return { verdict: { ok: true, at: now }, bad: badOut };
  const waitMs = Number(wait);
  const usedN = Number(used);
  if (ok !== 0 || typeof limit !== 'string' || !LIMITS.has(limit)) return undefined;
  if (!(waitMs >= 0 && waitMs <= MAX_WAIT) || !(usedN >= 0 && Number.isFinite(usedN))) {
    return undefined;
  }
  const name = limit as TenantLimitName;
  const value = (name === 'budget' ? limits.usd : limits[name]) ?? 0;
  return { verdict: { ok: false, limit: name, waitMs, used: usedN, value }, bad: badOut };
}

/** What a shared store lends its tenants' counts. */
export interface SharedTenantContext {
  /** The client, when it is ready and the store is not degraded. */
  ready(): RedisClientLike | undefined;
  prefix(): string | undefined;
  timeout: number;
  degrade(error: unknown): void;
  /** A field another writer left was skipped. */
  skipped(what: string): void;
}

/**
 * Tenants' counts in Redis, shared by every replica: {@link TENANT_TAKE_SCRIPT} takes a call's
 * charge atomically, so two replicas cannot both take a tenant's last room, and a replica that
 * restarts finds its tenants' budgets where they were. While Redis cannot be reached, the counts
 * of this process stand in (the store reports `degraded`).
 *
 * @example
 * ```ts
 * const counts = new SharedTenantCounts({ ready, prefix, timeout: 1000, degrade, skipped });
 * await counts.take('acme', { tpm: 2000 }, { tokens: 500, requests: 1, usd: 0 }, Date.now());
 * ```
 */
export class SharedTenantCounts implements TenantCounts {
  private readonly local = new LocalTenantCounts();

  constructor(private readonly context: SharedTenantContext) {}

  take(
    key: string,
    limits: TenantLimits,
    charge: TenantCharge,
    now: number,
  ): TenantVerdict | Promise<TenantVerdict> {
    const client = this.context.ready();
    const prefix = this.context.prefix();
    if (client === undefined || prefix === undefined) {
      return this.local.take(key, limits, charge, now);
    }
    const period = limits.period === undefined ? undefined : periodOf(now, limits.period);
    // A field holds at most what its limit lets through, and what answers add beyond it.
    const most = 10 * Math.max(limits.tpm ?? 0, limits.tokensPerDay ?? 0, 1e6);
    const args = [
      now,
      limits.tpm ?? 0,
      limits.rpm ?? 0,
      limits.tokensPerDay ?? 0,
      limits.usd ?? 0,
      period?.key ?? '',
      period?.end ?? 0,
      charge.tokens,
      charge.requests,
      charge.usd.toPrecision(17),
      most,
      10 * Math.max(limits.usd ?? 0, 1),
    ];
    const sent = client.eval(TENANT_TAKE_SCRIPT, 1, tenantKey(prefix, key), ...args);
    return bounded(sent, 'tenant', this.context.timeout).then(
      (reply) => {
        const read = readTakeReply(reply, limits, now);
        if (read === undefined) throw new Error('the tenant script answered something else');
        if (read.bad !== undefined) {
          this.context.skipped(`a tenant count that is not a count (field ${read.bad})`);
        }
        return read.verdict;
      },
      (error: unknown) => {
        this.context.degrade(error);
        return this.local.take(key, limits, charge, now);
      },
    );
  }

  adjust(key: string, delta: TenantCharge, at: number, limits: TenantLimits): void {
    this.local.adjust(key, delta, at, limits);
    const client = this.context.ready();
    const prefix = this.context.prefix();
    if (client === undefined || prefix === undefined) return;
    const bucket = Math.floor(at / BUCKET_MS);
    const args: (string | number)[] = [];
    if (delta.tokens !== 0) args.push(`t${bucket}`, delta.tokens, `d${dayOf(at)}`, delta.tokens);
    if (delta.requests !== 0) args.push(`r${bucket}`, delta.requests);
    if (delta.usd !== 0 && limits.period !== undefined) {
      args.push(`u${periodOf(at, limits.period).key}`, delta.usd.toPrecision(17));
    }
    if (args.length === 0) return;
    bounded(
      client.eval(TENANT_ADJUST_SCRIPT, 1, tenantKey(prefix, key), ...args),
      'tenant',
      this.context.timeout,
    ).catch((error: unknown) => this.context.degrade(error));
  }
}

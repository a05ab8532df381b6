import { createHash } from 'node:crypto';
import type Redis from 'ioredis';
import type { Switchboard } from 'nestjs-switchboard';
import { peerFold, type PeerReport } from '../../src/state/peer-report';
import { RedisServer } from '../support/redis-server';
import { eventually } from '../support/eventually';
import { ask, GPT } from '../support/upstream';
import { cluster, inspector, type Cluster } from './cluster';

/**
 * Another writer on the same prefix (another application with the same deployment names, an
 * older replica, anyone with write access) puts junk next to what an honest replica publishes.
 * The victim replica must keep its own limits, keep seeing the honest usage, never cool past
 * maxCooldown, never let a rejection escape, and recover within one window once the junk is gone.
 *
 * Syncs are driven by the test (`step`), on a clock the test moves: what is asserted follows
 * from the order of writes, never from timing.
 */

const WINDOW = 60_000;
const DAY = 86_400_000;
const TEN_YEARS = 10 * 365 * DAY;
const QUOTA = { tpm: 100_000, rpm: 1_000 };
const FIELD0 = `oai0:${GPT}`;
const FIELD1 = `oai1:${GPT}`;

let server: RedisServer;
let redis: Redis;
let c: Cluster | undefined;
const escaped: unknown[] = [];
const onUnhandled = (reason: unknown) => escaped.push(reason);

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  server = await RedisServer.start();
  redis = inspector(server.url);
});
afterEach(async () => {
  await c?.close();
  c = undefined;
  expect(escaped).toEqual([]);
});
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  redis.disconnect();
  await server.close();
});

/**
 * An honest replica (0) and a victim (1) over two deployments, synced only by `step`; they admit
 * by the synced view alone (no leases), which is what a forged value could bend.
 */
async function pair() {
  const time = { offset: 0 };
  const k = (c = await cluster({
    instances: 2,
    redisUrl: server.url,
    deployments: 2,
    quota: QUOTA,
    simulated: QUOTA,
    ratelimitWindow: WINDOW,
    clock: () => Date.now() + time.offset,
    state: { syncInterval: 3_600_000, leases: false },
  }));
  await eventually(() => k.instances.every((sb) => sb.state.health().lastSync !== undefined));
  const folds = k.instances.map((sb) => peerFold({ deployments: sb.deployments }));
  /** One sync of instance `i`, folded into its models as the switchboard's own syncs are. */
  const step = async (i: number): Promise<PeerReport> => {
    const report = await k.instances[i]!.state.sync!();
    folds[i]!(report);
    return report;
  };
  const now = () => Date.now() + time.offset;
  return { k, time, step, now, honest: k.instances[0]!, victim: k.instances[1]! };
}

const model = (sb: Switchboard, d: string) => sb.deployments.get(d)!.models.get(GPT)!;

/** The honest replica's published value: the one that speaks of oai0. */
async function honestValue(prefix: string): Promise<{ field: string; at: number; body: Body }> {
  const all = await redis.hgetall(`${prefix}usage`);
  const [field, value] = Object.entries(all).find(([, v]) => v.includes(`"${FIELD0}"`))!;
  const space = value.indexOf(' ');
  return {
    field,
    at: Number(value.slice(0, space)),
    body: JSON.parse(value.slice(space + 1)) as Body,
  };
}

interface Body {
  b: number;
  m: Record<string, number[]>;
  r?: Record<string, number[]>;
}

/** The honest body with each bucket's counts and each reading's counts mapped by `f`. */
function forge(
  body: Body,
  counts: (n: number) => unknown,
  reading: (flat: number[]) => unknown[] = (flat) => [
    ...flat.slice(0, 2),
    counts(flat[2]!),
    ...flat.slice(3, 5),
    ...flat.slice(5).map((n) => (n < 0 ? n : counts(n))),
  ],
): Record<string, unknown> {
  const m: Record<string, unknown[]> = {};
  for (const [field, flat] of Object.entries(body.m)) {
    m[field] = flat.map((n, i) => (i % 3 === 0 ? n : counts(n)));
  }
  const r: Record<string, unknown[]> = {};
  for (const [field, flat] of Object.entries(body.r ?? {})) r[field] = reading(flat);
  return { b: body.b, m, r };
}

const value = (at: number, body: unknown) => `${at} ${JSON.stringify(body)}`;

describe('a second writer on the same prefix', () => {
  it('leaves the victim its limits, the honest usage and a capped cooldown; all is well one window after it stops', async () => {
    const { k, time, step, now, honest, victim } = await pair();
    // Two random choices spread the calls: make them until oai0 has had a few.
    for (let i = 0; i < 50 && model(honest, 'oai0').quota.localUsage().requests < 3; i++) {
      await honest.chat.completions.create(ask(`hello ${i}`, { max_tokens: 50 }));
    }
    await step(0);
    await step(1);
    const honestTokens = model(honest, 'oai0').quota.localUsage().tokens;
    const honestRequests = model(honest, 'oai0').quota.localUsage().requests;
    expect(honestRequests).toBe(3);
    expect(model(victim, 'oai0').tpmUsage).toBe(honestTokens);
    expect(model(victim, 'oai0').rpmUsage).toBe(honestRequests);

    // The junk: every kind of value the issue names, next to the honest one and over it.
    const { field: honestField, at, body } = await honestValue(k.prefix);
    expect(body.r?.[FIELD0]).toBeDefined(); // the honest reading is shared too
    const index = body.m[FIELD0]![0]!;
    const ones = body.m[FIELD0]!.length / 3;
    const future = (n: number) => n + TEN_YEARS;
    const junk: Record<string, string> = {
      scaled: value(
        at,
        forge(body, (n) => n * 1e6),
      ),
      negated: value(
        at,
        forge(body, (n) => -n),
      ),
      // Counts of 1 look honest and may count; a reading whose limit is 1 must teach nothing.
      ones: value(
        at,
        forge(
          body,
          () => 1,
          (flat) => [now(), now(), 1, flat[3], flat[4], 1, 1, 1, 1, -1, -1, -1, -1],
        ),
      ),
      stampedAhead: value(at + TEN_YEARS, body),
      readingAhead: value(at, {
        ...forge(
          body,
          (n) => n,
          (flat) => [future(flat[0]!), future(flat[1]!), ...flat.slice(2)],
        ),
        m: {},
      }),
      bucketAhead: value(at, { b: body.b, m: { [FIELD0]: [index + TEN_YEARS / body.b, 500, 1] } }),
      nulls: value(
        at,
        forge(
          body,
          () => null,
          (flat) => flat.map(() => null),
        ),
      ),
      garbage: 'lorem ipsum',
      halfJson: `${at} {"b":`,
      noTime: `soon {"b":1000,"m":{}}`,
      [honestField]: value(
        at + TEN_YEARS,
        forge(body, (n) => n * 1e6),
      ),
    };
    await redis.hset(`${k.prefix}usage`, junk);
    await redis.hset(`${k.prefix}cooldowns`, {
      [FIELD0]: String(now() + 1000 * DAY),
      [FIELD1]: 'garbage',
      'oai0:other-model': 'null',
    });

    await step(0); // the honest replica writes over its forged field
    await step(1);
    const v0 = model(victim, 'oai0');
    // Its configured limits, whatever the readings said.
    expect([v0.quota.limits.tpm.value, v0.quota.limits.rpm.value]).toEqual([QUOTA.tpm, QUOTA.rpm]);
    expect([
      model(victim, 'oai1').quota.limits.tpm.value,
      model(victim, 'oai1').quota.limits.rpm.value,
    ]).toEqual([QUOTA.tpm, QUOTA.rpm]);
    // The honest usage, plus the counts of 1 that look like any other replica's.
    expect(v0.tpmUsage).toBe(honestTokens + ones);
    expect(v0.rpmUsage).toBe(honestRequests + ones);
    // The thousand-day cooldown is honoured only up to maxCooldown (default: one day).
    expect(v0.isCooling()).toBe(true);
    expect(v0.cooldownRemaining).toBeLessThanOrEqual(DAY);
    expect(model(victim, 'oai1').isCooling()).toBe(false);
    expect(victim.state.health().status).toBe('up');
    const warnings = k.loggers[1]!.warnings(/skipped/);
    expect(warnings.length).toBeGreaterThanOrEqual(5);
    expect(warnings.join('\n')).not.toMatch(/unavailable/);

    // The junk stays: nothing new is logged, the cap is not renewed, honest cooldowns still go through.
    const capped = v0.cooldownUntil;
    time.offset += 1_000;
    await step(1);
    expect(k.loggers[1]!.warnings(/skipped/)).toEqual(warnings);
    expect(v0.cooldownUntil).toBe(capped);
    model(honest, 'oai1').markDown(30_000, 'connection');
    await eventually(async () => (await redis.hget(`${k.prefix}cooldowns`, FIELD1)) !== 'garbage');
    await step(1);
    expect(model(victim, 'oai1').isCooling()).toBe(true);
    expect(model(victim, 'oai1').cooldownRemaining).toBeLessThanOrEqual(30_000);

    // The junk goes. At once: no phantom usage, no cooldown the store no longer holds.
    await redis.hdel(`${k.prefix}usage`, ...Object.keys(junk).filter((f) => f !== honestField));
    await redis.hdel(`${k.prefix}cooldowns`, FIELD0, 'oai0:other-model');
    await step(0);
    await step(1);
    expect(v0.tpmUsage).toBe(honestTokens);
    expect(v0.rpmUsage).toBe(honestRequests);
    expect(v0.isCooling()).toBe(false);

    // One window on: everything the junk left has aged out; every call succeeds.
    time.offset += WINDOW + 1_000;
    await step(0);
    await step(1);
    for (const d of ['oai0', 'oai1']) {
      const m = model(victim, d);
      expect([m.quota.limits.tpm.value, m.quota.limits.rpm.value]).toEqual([QUOTA.tpm, QUOTA.rpm]);
      expect([m.tpmUsage, m.rpmUsage, m.util]).toEqual([0, 0, 0]);
      expect(m.isCooling()).toBe(false);
      expect(m.hasRoom({ input: 50_000, output: 40_000 })).toBe(true);
    }
    const calls = Array.from({ length: 20 }, (_, i) =>
      victim.chat.completions.create(ask(`after ${i}`, { max_tokens: 50 })),
    );
    const results = await Promise.allSettled(calls);
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
  });

  it('a key of the wrong type stops nothing else', async () => {
    const { k, step, honest, victim } = await pair();
    // The usage hash replaced by a string: cooldowns still go through, sessions still work.
    await redis.del(`${k.prefix}usage`);
    await redis.set(`${k.prefix}usage`, 'not a hash');
    const session = 'user-7';
    const digest = createHash('sha256').update(session).digest('base64url').slice(0, 22);
    await redis.rpush(`${k.prefix}session:${digest}`, 'oai0');
    model(honest, 'oai1').markDown(30_000, 'connection');
    await eventually(async () => (await redis.hexists(`${k.prefix}cooldowns`, FIELD1)) === 1);
    await step(1);
    expect(model(victim, 'oai1').isCooling()).toBe(true);
    await victim.chat.completions.create(ask('hi', { session_id: session }));
    expect(victim.state.health().status).toBe('up');
    // One line for the usage key, one for the session key; none again on the next sync.
    await step(1);
    expect(k.loggers[1]!.warnings(/wrong type/)).toHaveLength(2);

    // The cooldowns hash replaced by a list: usage still goes through.
    await redis.del(`${k.prefix}usage`, `${k.prefix}cooldowns`);
    await redis.rpush(`${k.prefix}cooldowns`, 'x');
    await honest.chat.completions.create(ask('hello', { max_tokens: 50 }));
    await step(0);
    await step(1);
    const tokens =
      model(honest, 'oai0').quota.localUsage().tokens +
      model(honest, 'oai1').quota.localUsage().tokens;
    expect(model(victim, 'oai0').tpmUsage + model(victim, 'oai1').tpmUsage).toBe(
      tokens +
        model(victim, 'oai0').quota.localUsage().tokens +
        model(victim, 'oai1').quota.localUsage().tokens,
    );
    // Unknown while the key cannot be read: a cooldown taken from it is not lifted blindly.
    expect(model(victim, 'oai1').isCooling()).toBe(true);
    expect(victim.state.health().status).toBe('up');

    // The junk goes: cooldowns are shared again, and end when the store no longer holds them.
    await redis.del(`${k.prefix}cooldowns`);
    await step(1);
    expect(model(victim, 'oai1').isCooling()).toBe(false);
    model(honest, 'oai0').markDown(30_000, 'connection');
    await eventually(async () => (await redis.hexists(`${k.prefix}cooldowns`, FIELD0)) === 1);
    expect(await redis.pttl(`${k.prefix}cooldowns`)).toBeGreaterThan(0); // the key expires
    await step(1);
    expect(model(victim, 'oai0').isCooling()).toBe(true);
  });
});

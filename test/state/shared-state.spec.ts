import type Redis from 'ioredis';
import OpenAI from 'openai';
import { checkPeers } from '../../src/state/redis/peer-checks';
import { readSyncReply, SYNC_SCRIPT, syncCommand } from '../../src/state/redis/sync-script';
import type { SimulatedDeploymentOptions } from 'nestjs-switchboard/testing';
import { RedisServer } from '../support/redis-server';
import { ask, GPT } from '../support/upstream';
import { cluster, inspector, type Cluster } from './cluster';
import { eventually } from '../support/eventually';

const NAMES = ['oai0', 'oai1', 'oai2'];

let server: RedisServer;
let redis: Redis;
let c: Cluster | undefined;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = inspector(server.url);
});
afterEach(async () => {
  await c?.close();
  c = undefined;
});
afterAll(async () => {
  redis.disconnect();
  await server.close();
});

/** Every instance reports, for every deployment, the sum of all instances' own usage. */
function converged(k: Cluster): boolean {
  return NAMES.every((d) => {
    let tokens = 0;
    let requests = 0;
    k.instances.forEach((_, i) => {
      tokens += k.model(i, d).quota.localUsage().tokens;
      requests += k.model(i, d).quota.localUsage().requests;
    });
    return k.instances.every(
      (_, i) => k.model(i, d).tpmUsage === tokens && k.model(i, d).rpmUsage === requests,
    );
  });
}

const synced = (k: Cluster) => k.instances.every((sb) => sb.state.health().lastSync !== undefined);

/**
 * Two instances over one deployment with `quota` (the simulated one enforces it too, with
 * `simulated` on top) that sync only when the test says (closing syncs once more), so the order
 * is certain; `time.offset` moves their clock; `upstream()` is what the deployment counts. They
 * admit by the synced view alone (no leases): the view is what these specs look at.
 */
async function closingPair(
  quota: { tpm: number; rpm: number },
  simulated: Partial<SimulatedDeploymentOptions> = {},
) {
  const time = { offset: 0 };
  const k = (c = await cluster({
    instances: 2,
    redisUrl: server.url,
    clock: () => Date.now() + time.offset,
    deployments: 1,
    quota,
    simulated: { ...quota, ...simulated },
    state: { syncInterval: 3_600_000, leases: false },
  }));
  await eventually(() => synced(k));
  const upstream = () =>
    quota.tpm -
    Number(k.upstream.deployment('oai0').rateLimitHeaders()['x-ratelimit-remaining-tokens']);
  return { k, time, upstream };
}

describe('usage', () => {
  it.each([2, 4])(
    'each of %i instances routes on the cluster total after a sync, counted once',
    async (n) => {
      // Uncapped calls charged no reservation: the view is then exactly what the upstream served.
      const k = (c = await cluster({
        instances: n,
        redisUrl: server.url,
        quota: { tpm: 30_000, rpm: 300, outputReservation: 0 },
      }));
      await eventually(() => synced(k));
      const calls = k.instances.flatMap((sb, i) =>
        Array.from({ length: 3 + i }, (_, j) =>
          sb.chat.completions.create(ask(`instance ${i} call ${j} `.repeat(20))),
        ),
      );
      await Promise.all(calls);
      await eventually(() => converged(k), 3_000);

      // The cluster view is exactly what the upstream served: the preflight estimates were
      // replaced by the real usage, nothing was counted twice.
      for (const d of NAMES) {
        const served = k.upstream.deployment(d).stats;
        for (let i = 0; i < n; i++) {
          expect(k.model(i, d).tpmUsage).toBe(served.totalTokens);
          expect(k.model(i, d).rpmUsage).toBe(served.requests);
        }
      }
      const total = NAMES.reduce((s, d) => s + k.model(0, d).rpmUsage, 0);
      expect(total).toBe(calls.length);
      const stats = k.instances[n - 1]!.stats();
      expect(stats.oai0!['gpt-4o-mini']!.tpm).toBe(
        `${k.upstream.deployment('oai0').stats.totalTokens}/30000`,
      );
    },
  );

  it('shares a sliding window: nothing resets at a clock boundary, usage leaves as it ages', async () => {
    // Start 5 s before an aligned minute boundary, where a fixed-window store would reset.
    const now = Date.now();
    let offset = Math.ceil(now / 60_000) * 60_000 - 5_000 - now;
    const clock = () => Date.now() + offset;
    const k = (c = await cluster({ instances: 2, redisUrl: server.url, clock }));
    await eventually(() => synced(k));
    const a = k.model(0, 'oai0');
    const b = k.model(1, 'oai0');

    a.spend(100, 1); // preflight estimate
    await eventually(() => b.tpmUsage === 100 && b.rpmUsage === 1);
    a.spend(-60); // the answer used less
    await eventually(() => b.tpmUsage === 40);
    expect(a.tpmUsage).toBe(40);

    offset += 10_000; // across the boundary, 10 s after the charge: still in everyone's window
    b.spend(10, 1);
    await eventually(() => a.tpmUsage === 50 && a.rpmUsage === 2);
    expect(b.tpmUsage).toBe(50);

    offset += 51_000; // 61 s after a's charge, 51 s after b's
    await eventually(() => a.tpmUsage === 10 && b.tpmUsage === 10 && a.rpmUsage === 1);
    a.spend(-500); // a late refund of usage that left the window takes nothing from b's
    expect(a.tpmUsage).toBe(10);
    offset += 60_000;
    await eventually(() => a.tpmUsage === 0 && b.tpmUsage === 0 && b.rpmUsage === 0);

    const keys = await redis.keys(`${k.prefix}usage*`);
    expect(keys).toEqual([`${k.prefix}usage`]); // one hash, a field per instance
    const fields = await redis.hgetall(keys[0]!);
    expect(Object.keys(fields)).toHaveLength(2);
    expect(await redis.pttl(keys[0]!)).toBeGreaterThan(0); // expires when nobody writes
  });

  it("keeps a stopped instance's usage until it ages out, then deletes its field", async () => {
    let offset = 0;
    const clock = () => Date.now() + offset;
    const k = (c = await cluster({ instances: 2, redisUrl: server.url, clock }));
    await eventually(() => synced(k));
    const b = k.model(1, 'oai1');
    k.model(0, 'oai1').spend(70, 1);
    await eventually(() => b.tpmUsage === 70);
    await k.instances[0]!.close(); // its calls still count at the upstream for the minute
    offset += 30_000;
    await eventually(
      () => k.instances[1]!.state.health().lastSync! >= new Date(clock() - 1_000).toISOString(),
    );
    expect(b.tpmUsage).toBe(70);
    offset += 31_000;
    await eventually(() => b.tpmUsage === 0);
    offset += 60_000; // two windows without a write: gone
    await eventually(async () => (await redis.hlen(`${k.prefix}usage`)) === 1);
  });

  it("counts once the others' usage that an answer's headers held before a sync reported it", async () => {
    const { k, time, upstream } = await closingPair({ tpm: 30_000, rpm: 300 });
    const call = (i: number, text: string) =>
      k.instances[i]!.chat.completions.create({
        model: GPT,
        messages: [{ role: 'user', content: text }],
        max_tokens: 50,
      });
    await call(0, 'a long question '.repeat(250)); // about 1 000 tokens
    time.offset += 2_000; // b's call is sent in a later second than a's
    await call(1, 'a short one');
    const b = k.model(1, 'oai0');
    // b's answer counted a's call: b's view is the upstream's before it hears of a.
    expect(Math.abs(b.quota.anchoredUsage().tpm - upstream())).toBeLessThan(100);
    await k.instances[0]!.close(); // publishes a's usage
    await k.instances[1]!.close(); // reads it
    expect(b.tpmUsage).toBeGreaterThan(b.quota.localUsage().tokens + 900);
    expect(Math.abs(b.quota.anchoredUsage().tpm - upstream())).toBeLessThan(100);
  });

  it("anchors on another instance's answer: a replica that never sent there sees an unseen application", async () => {
    const limits = { tpm: 10_000, rpm: 1_000 };
    const { k, time, upstream } = await closingPair(limits, { rpm: 6_000, chargeMaxTokens: true });
    // Another application, sharing the deployment with nobody's store, takes about 5 000.
    const other = new OpenAI({
      baseURL: k.upstream.deployment('oai0').openaiBaseURL,
      apiKey: 'other',
      maxRetries: 0,
    });
    await other.chat.completions.create(ask('y'.repeat(16_000), { max_tokens: 1_000 }));
    time.offset += 1_000;
    await k.instances[0]!.chat.completions.create(ask('x', { max_tokens: 10 }));
    const b = k.model(1, 'oai0');
    // b has sent nothing there: it knows nothing of the other application.
    expect(b.quota.anchoredUsage().tpm).toBe(0);
    expect(b.hasRoom({ input: 100, output: 6_000 })).toBe(true);
    await k.instances[0]!.close(); // publishes a's usage and its answer's reading
    await k.instances[1]!.close(); // reads them
    expect(upstream()).toBeGreaterThan(4_500);
    expect(Math.abs(b.quota.anchoredUsage().tpm - upstream())).toBeLessThan(100);
    expect(b.quota.upstreamRemaining.tpm?.remaining).toBe(10_000 - upstream());
    expect(b.hasRoom({ input: 100, output: 6_000 })).toBe(false);
  });

  it('counts a replayed or delayed write once, and never lets an older one win', async () => {
    const prefix = `replay${Date.now()}:`;
    const now = Date.now();
    const s = Math.floor(now / 1000);
    const write = (id: string, at: number, tokens: number) =>
      syncCommand(prefix, {
        id,
        now: at,
        cooldowns: new Map(),
        usage: { at, bucketMs: 1000, models: { 'oai0:m': [s, tokens, 1] } },
        usageTtl: 120_000,
        staleBefore: at - 120_000,
        sessions: [],
        sessionTtl: 1_000,
      });
    const model = { deployment: 'oai0', model: 'm', tokens: 0, requests: 0, input: 0, output: 0 };
    const bounds = {
      now,
      windowMs: 60_000,
      skewMs: 5_000,
      maxCooldown: 60_000,
      models: new Map([['oai0:m', model]]),
    };
    // Read as a sync reads it: the script's answer, checked.
    const run = async (cmd: { keys: string[]; args: (string | number)[] }) =>
      checkPeers(
        readSyncReply(await redis.eval(SYNC_SCRIPT, cmd.keys.length, ...cmd.keys, ...cmd.args)),
        bounds,
      ).report;
    await run(write('a', now, 100));
    await run(write('a', now, 100)); // the same sync again (a retry after a timeout)
    await run(write('a', now - 50, 999)); // a delayed older write
    const seen = await run(write('b', now, 1));
    expect(seen.models.get('oai0')?.get('m')?.usage).toEqual({
      tokens: 100,
      requests: 1,
      recentRequests: 1,
      spans: [s * 1000, (s + 1) * 1000, 100, 1],
    });
    expect(await redis.hlen(`${prefix}usage`)).toBe(2);
  });
});

describe('cooldowns', () => {
  it('keeps every instance off a model that returned 429 to one, until the cooldown ends', async () => {
    // The cooldown ends when the test moves the clock, never while a busy machine is slow.
    let offset = 0;
    const clock = () => Date.now() + offset;
    const k = (c = await cluster({ instances: 4, redisUrl: server.url, clock }));
    await eventually(() => synced(k));
    k.upstream.deployment('oai0').fail({ kind: 'status', status: 429, retryAfterMs: 60_000 });
    for (let i = 0; i < 60 && !k.model(0, 'oai0').isCooling(); i++) {
      await k.instances[0]!.chat.completions.create(ask('hello'));
    }
    const until0 = k.model(0, 'oai0').cooldownUntil;
    expect(k.model(0, 'oai0').isCooling()).toBe(true);
    await eventually(() => [1, 2, 3].every((i) => k.model(i, 'oai0').isCooling()));
    for (const i of [1, 2, 3]) expect(k.model(i, 'oai0').cooldownUntil).toBe(until0);

    const before = k.upstream.deployment('oai0').stats.requests;
    await Promise.all(
      [1, 2, 3].flatMap((i) =>
        Array.from({ length: 10 }, () => k.instances[i]!.chat.completions.create(ask('hi'))),
      ),
    );
    expect(k.upstream.deployment('oai0').stats.requests).toBe(before);

    offset += 60_000;
    expect(clock()).toBeGreaterThanOrEqual(until0);
    for (let i = 0; i < 4; i++) expect(k.model(i, 'oai0').isCooling()).toBe(false);
  });

  it('lifts a cooldown everywhere on a mark-up', async () => {
    const k = (c = await cluster({ instances: 3, redisUrl: server.url }));
    await eventually(() => synced(k));
    k.model(0, 'oai1').markDown(60_000);
    await eventually(() => k.instances.every((_, i) => k.model(i, 'oai1').isCooling()));
    k.model(2, 'oai1').markUp();
    await eventually(() => k.instances.every((_, i) => !k.model(i, 'oai1').isCooling()));
    expect(await redis.hgetall(`${k.prefix}cooldowns`)).toEqual({});
  });
});

describe('sessions', () => {
  it('continues a session on the same deployment through another instance', async () => {
    // A lookup slower than the store timeout selects locally by design; a loaded machine must
    // not turn that into a failure of this spec, which is about the shared assignment.
    const k = (c = await cluster({
      instances: 4,
      redisUrl: server.url,
      state: { timeout: 2_000 },
    }));
    await eventually(() => synced(k));
    for (let s = 0; s < 12; s++) {
      const id = `user-${s}`;
      const first = k.instances[s % 4]!;
      const next = k.instances[(s + 1) % 4]!;
      await first.chat.completions.create(ask(`${id} turn 1`, { session_id: id }));
      const home = first.registry.sessions.get(id);
      expect(home).toBeDefined();
      // A client's round trip separates an answer from its next turn; in one process the next
      // turn's lookup could otherwise reach Redis before the write the answer started.
      await eventually(async () => (await redis.keys(`${k.prefix}session:*`)).length === s + 1, {
        what: `session ${id}'s assignment in Redis`,
      });
      expect(next.registry.sessions.get(id)).toBeUndefined();
      await next.chat.completions.create(ask(`${id} turn 2`, { session_id: id }));
      expect(next.registry.sessions.get(id)).toBe(home);
      const served = k.upstream
        .deployment(home!)
        .requests.some((r) => JSON.stringify(r.body).includes(`${id} turn 2`));
      expect(served).toBe(true);
    }
  });

  it('slides the TTL of a session while it is used, and forgets it after', async () => {
    const k = (c = await cluster({
      instances: 2,
      redisUrl: server.url,
      state: { sessionTtl: 1_000 },
    }));
    await eventually(() => synced(k));
    const sb = k.instances[0]!;
    await sb.chat.completions.create(ask('one', { session_id: 'sliding' }));
    const [key] = await redis.keys(`${k.prefix}session:*`);
    expect(key).toBeDefined();
    await eventually(async () => {
      const ttl = await redis.pttl(key!);
      return ttl > 0 && ttl < 600;
    }, 2_000);
    await sb.chat.completions.create(ask('two', { session_id: 'sliding' }));
    await eventually(async () => (await redis.pttl(key!)) > 800, 1_000);
    await eventually(async () => (await redis.exists(key!)) === 0, 2_000);
  });

  it('writes nothing secret, and only under its prefix', async () => {
    await redis.flushall();
    const k = (c = await cluster({ instances: 2, redisUrl: server.url }));
    await eventually(() => synced(k));
    await k.instances[0]!.chat.completions.create(ask('x', { session_id: 'alice@example.com' }));
    k.model(1, 'oai2').markDown(5_000);
    await eventually(() => converged(k) && k.model(0, 'oai2').isCooling());
    const keys = await redis.keys('*');
    expect(keys.length).toBeGreaterThan(0);
    let dump = '';
    for (const key of keys) {
      expect(key.startsWith(k.prefix)).toBe(true);
      const type = await redis.type(key);
      dump +=
        key + JSON.stringify(type === 'hash' ? await redis.hgetall(key) : await redis.get(key));
    }
    expect(dump).not.toMatch(/sk-secret|alice|example\.com|127\.0\.0\.1/);
  });
});

describe('stored responses', () => {
  it('chains a response created through one instance through others that never saw it', async () => {
    const k = (c = await cluster({ instances: 3, redisUrl: server.url }));
    await eventually(() => synced(k));
    const first = await k.instances[0]!.responses.create({ model: GPT, input: 'turn 0' });
    const home = NAMES.find((d) =>
      k.upstream.deployment(d).requests.some((r) => r.api === 'responses'),
    )!;
    let previous = first.id;
    for (let turn = 1; turn <= 6; turn++) {
      // A client's round trip separates an answer from its next turn; in one process the next
      // turn's lookup could otherwise reach Redis before the write the answer started.
      await eventually(async () => (await redis.keys(`${k.prefix}response:*`)).length === turn, {
        what: `turn ${turn - 1}'s response key in Redis`,
      });
      // Each turn through another instance, which knows only what Redis tells it.
      const sb = k.instances[turn % 3]!;
      const next = await sb.responses.create({
        model: GPT,
        input: `turn ${turn}`,
        previous_response_id: previous,
      });
      expect(next.previous_response_id).toBe(previous);
      previous = next.id;
    }
    const retrieved = await k.instances[2]!.responses.retrieve(first.id);
    expect(retrieved.output_text).toBe('turn 0');

    // Every call, the retrieve included, reached the deployment that created the chain.
    for (const d of NAMES) {
      const calls = k.upstream.deployment(d).requests.filter((r) => r.api !== 'chat').length;
      expect(calls).toBe(d === home ? 8 : 0);
      expect(k.upstream.deployment(d).stats.byStatus[404] ?? 0).toBe(0);
    }
    const keys = await redis.keys(`${k.prefix}response:*`);
    expect(keys).toHaveLength(7);
    for (const key of keys) {
      expect(await redis.get(key)).toBe(home);
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(86_400_000);
    }
  });

  it('keeps a response key for responseTtl from its creation, apart from the session TTL', async () => {
    const k = (c = await cluster({
      instances: 2,
      redisUrl: server.url,
      state: { responseTtl: 1_000, sessionTtl: 60_000 },
    }));
    await eventually(() => synced(k));
    const r = await k.instances[0]!.responses.create({
      model: GPT,
      input: 'short-lived',
      session_id: 'kept',
    });
    const [key] = await redis.keys(`${k.prefix}response:*`);
    expect(key).toBeDefined();
    expect(key).not.toContain(r.id); // a digest, like session keys
    expect(await redis.pttl(key!)).toBeLessThanOrEqual(1_000);
    await eventually(async () => (await redis.exists(key!)) === 0, 3_000);
    // Gone from Redis, never seen by instance 1: it says so and sends nothing.
    const sent = NAMES.reduce((n, d) => n + k.upstream.deployment(d).requests.length, 0);
    await expect(
      k.instances[1]!.responses.create({ model: GPT, input: 'late', previous_response_id: r.id }),
    ).rejects.toThrow(new RegExp(`No deployment is known to hold ${r.id}`));
    expect(NAMES.reduce((n, d) => n + k.upstream.deployment(d).requests.length, 0)).toBe(sent);
    const [session] = await redis.keys(`${k.prefix}session:*`);
    expect(await redis.pttl(session!)).toBeGreaterThan(1_000);
  });

  it('the sync script writes sessions and responses each with its own TTL', async () => {
    const prefix = `ttl${Date.now()}:`;
    const now = Date.now();
    const cmd = syncCommand(prefix, {
      id: 'a',
      now,
      cooldowns: new Map(),
      usageTtl: 120_000,
      staleBefore: now - 120_000,
      sessions: [{ key: `${prefix}session:s`, deployment: 'oai0' }],
      sessionTtl: 5_000,
      responses: [
        { key: `${prefix}response:r1`, deployment: 'oai1' },
        { key: `${prefix}response:r2`, deployment: 'oai2' },
      ],
      responseTtl: 500_000,
    });
    await redis.eval(SYNC_SCRIPT, cmd.keys.length, ...cmd.keys, ...cmd.args);
    expect(
      await redis.mget(`${prefix}session:s`, `${prefix}response:r1`, `${prefix}response:r2`),
    ).toEqual(['oai0', 'oai1', 'oai2']);
    const session = await redis.pttl(`${prefix}session:s`);
    expect(session).toBeGreaterThan(0);
    expect(session).toBeLessThanOrEqual(5_000);
    for (const r of ['r1', 'r2']) {
      expect(await redis.pttl(`${prefix}response:${r}`)).toBeGreaterThan(5_000);
    }
  });
});

import type OpenAI from 'openai';
import { SwitchboardHealthIndicator } from 'nestjs-switchboard';
import { RedisServer } from '../support/redis-server';
import { ask, GPT } from '../support/upstream';
import { cluster, inspector, type Cluster } from './cluster';
import { eventually } from '../support/eventually';

const NAMES = ['oai0', 'oai1', 'oai2'];

let server: RedisServer;
let c: Cluster | undefined;

beforeEach(async () => {
  server = await RedisServer.start();
});
afterEach(async () => {
  await c?.close();
  c = undefined;
  await server.close();
});

const healthy = (k: Cluster) => k.instances.every((sb) => sb.state.health().status === 'up');
const degraded = (k: Cluster) => k.instances.every((sb) => sb.state.health().status === 'degraded');

/** Instance `i` reports the usage every instance has of every deployment. */
function sees(k: Cluster, i: number): boolean {
  return NAMES.every((d) => {
    const total = k.instances.reduce((s, _, j) => s + k.model(j, d).quota.localUsage().requests, 0);
    return k.model(i, d).rpmUsage === total;
  });
}

async function burst(k: Cluster, calls: number, session?: (i: number, j: number) => string) {
  await Promise.all(
    k.instances.flatMap((sb, i) =>
      Array.from({ length: calls }, (_, j) =>
        sb.chat.completions.create(ask(`call ${i}.${j}`, { session_id: session?.(i, j) })),
      ),
    ),
  );
}

/** Whether `promise` is already settled: it wins a race against one microtask turn. */
function settlesAtOnce(promise: Promise<unknown>): Promise<boolean> {
  const settled = promise.then(
    () => true,
    () => true,
  );
  return Promise.race([settled, Promise.resolve().then(() => false)]);
}

describe('Redis outage', () => {
  it('carries on locally while Redis is down, warns once, and resumes when it is back', async () => {
    const k = (c = await cluster({ instances: 2, redisUrl: server.url }));
    await eventually(() => healthy(k) && k.instances.every((sb) => sb.state.health().lastSync));
    await burst(k, 5);
    await eventually(() => sees(k, 0) && sees(k, 1));

    await server.stop();
    await burst(k, 10, (i, j) => `outage-${i}-${j}`); // new sessions: lookups must not wait
    await eventually(() => degraded(k));
    await burst(k, 10, (i, j) => `outage-${i}-${j}-b`);
    for (const logger of k.loggers) expect(logger.warnings(/Redis/)).toHaveLength(1);
    const indicator = new SwitchboardHealthIndicator(k.instances[0]!);
    const report = indicator.isHealthy('llm').llm;
    expect(report.status).toBe('up');
    expect(report.state).toMatchObject({ status: 'degraded', store: 'redis' });
    // Each instance now counts its own calls only.
    const own = NAMES.reduce((s, d) => s + k.model(0, d).quota.localUsage().requests, 0);
    expect(own).toBe(25);

    await server.restart();
    await eventually(() => healthy(k), 5_000);
    // Redis came back empty: the next syncs rebuild the whole window from every instance.
    await eventually(() => sees(k, 0) && sees(k, 1));
    expect(NAMES.reduce((s, d) => s + k.model(0, d).rpmUsage, 0)).toBe(50);
    for (const logger of k.loggers) {
      expect(logger.warnings(/Redis/)).toHaveLength(1);
      expect(logger.lines.some((l) => /reachable again/.test(l.message))).toBe(true);
    }
    // A session first seen during the outage was published on recovery.
    const home = k.instances[0]!.registry.sessions.get('outage-0-3');
    await k.instances[1]!.chat.completions.create(ask('again', { session_id: 'outage-0-3' }));
    expect(k.instances[1]!.registry.sessions.get('outage-0-3')).toBe(home);
  });

  it('publishes the responses created during an outage once Redis is back', async () => {
    const k = (c = await cluster({ instances: 2, redisUrl: server.url }));
    await eventually(() => healthy(k) && k.instances.every((sb) => sb.state.health().lastSync));
    await server.stop();
    const created: OpenAI.Responses.Response[] = [];
    for (let i = 0; i < 5; i++) {
      created.push(await k.instances[0]!.responses.create({ model: GPT, input: `during ${i}` }));
    }
    await eventually(() => degraded(k));
    // Redis never heard of them: instance 1 cannot place them, and sends nothing to guess.
    await expect(k.instances[1]!.responses.retrieve(created[0]!.id)).rejects.toThrow(
      /No deployment is known to hold/,
    );

    await server.restart();
    await eventually(() => healthy(k), 5_000);
    // The writes that failed went out with the first sync after the outage.
    const redis = inspector(server.url);
    try {
      await eventually(async () => (await redis.keys(`${k.prefix}response:*`)).length === 5);
    } finally {
      redis.disconnect();
    }
    for (const r of created) {
      const next = await k.instances[1]!.responses.create({
        model: GPT,
        input: 'after',
        previous_response_id: r.id,
      });
      expect(next.previous_response_id).toBe(r.id);
    }
    for (const d of NAMES) expect(k.upstream.deployment(d).stats.byStatus[404] ?? 0).toBe(0);
  });

  it('does not hold calls when Redis hangs: lookups give up after the timeout, then skip', async () => {
    const timeout = 1_000;
    const k = (c = await cluster({ instances: 1, redisUrl: server.url, state: { timeout } }));
    const sb = k.instances[0]!;
    await eventually(() => sb.state.health().lastSync !== undefined);
    server.freeze();
    try {
      // The first new session waits for its lookup, which gives up (a frozen Redis never
      // answers: without the bound this call would never finish)...
      await sb.chat.completions.create(ask('first', { session_id: 'frozen-1' }));
      expect(sb.state.health().status).toBe('degraded');
      // ...and once the store knows Redis is in trouble, nobody waits for it: a lookup is
      // answered before a single turn of the microtask queue, not after a timeout.
      for (let j = 2; j < 12; j++) {
        expect(await settlesAtOnce(sb.state.lookupSession!(`frozen-${j}`))).toBe(true);
      }
      await Promise.all(
        Array.from({ length: 10 }, (_, j) =>
          sb.chat.completions.create(ask('next', { session_id: `frozen-${j + 2}` })),
        ),
      );
      expect(k.loggers[0]!.warnings(/Redis/)).toHaveLength(1);
    } finally {
      server.resume();
    }
    await eventually(() => healthy(k), 3_000);
  });

  it('starts without Redis and joins it when it comes up', async () => {
    await server.stop();
    const k = (c = await cluster({ instances: 2, redisUrl: server.url }));
    await eventually(() => degraded(k));
    await burst(k, 3, (i, j) => `early-${i}-${j}`);
    for (const logger of k.loggers) expect(logger.warnings(/Redis/)).toHaveLength(1);
    await server.restart();
    await eventually(() => healthy(k) && sees(k, 0) && sees(k, 1), 5_000);
    expect(NAMES.reduce((s, d) => s + k.model(1, d).rpmUsage, 0)).toBe(6);
  });
});

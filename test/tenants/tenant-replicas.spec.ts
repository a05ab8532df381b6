import { tenantKey } from '../../src/state/redis/tenant-script';
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import {
  createSwitchboard,
  redisState,
  type DeploymentConfig,
  type Switchboard,
  type SwitchboardOptions,
} from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { eventually } from '../support/eventually';
import { FakeClock } from '../support/random';
import { RedisServer } from '../support/redis-server';
import { ask, GPT } from '../support/upstream';
import { inspector, RecordingLogger } from '../state/cluster';

let server: RedisServer;
let upstream: SimulatedUpstream;
const clock = new FakeClock();
const replicas: Switchboard[] = [];

beforeAll(async () => {
  server = await RedisServer.start();
  upstream = await SimulatedUpstream.start({ deployments: [{ name: 'oai0' }], clock: clock.now });
});
afterEach(async () => {
  await Promise.all(replicas.splice(0).map((sb) => sb.close()));
});
afterAll(async () => {
  await upstream.close();
  await server.close();
});

/** A replica on the shared Redis under `prefix`, once it has synced. */
async function replica(prefix: string, options: Partial<SwitchboardOptions>): Promise<Switchboard> {
  const deployments: DeploymentConfig[] = [
    {
      provider: 'openai',
      name: 'oai0',
      baseURL: upstream.deployment('oai0').openaiBaseURL,
      apiKey: 'sk',
      models: [{ name: GPT, tpm: 10_000_000, rpm: 100_000 }],
    },
  ];
  const sb = createSwitchboard({
    deployments,
    clock: clock.now,
    state: redisState({ url: server.url, prefix, syncInterval: 3_600_000 }),
    ...options,
  });
  replicas.push(sb);
  await eventually(() => sb.state.health().lastSync !== undefined);
  return sb;
}

/** 500 tokens at admission: 1200 characters (300) + 200 reserved. */
const call500 = (sb: Switchboard, tenant = 'acme') =>
  sb.chat.completions
    .create(ask('x'.repeat(1200), { max_tokens: 200, tenant }))
    .then(() => 'ok' as const)
    .catch((e: unknown) => e);

const acmeCalls = () =>
  upstream
    .deployment('oai0')
    .requests.filter((r) => r.api === 'chat')
    .map((r) => r.at);

describe('tenants across replicas (one Redis)', () => {
  it('holds acme to 2 000 admitted tokens per minute through both replicas together, minute after minute', async () => {
    const prefix = `t${randomBytes(4).toString('hex')}:`;
    const tenants = { acme: { tpm: 2000 } };
    const a = await replica(prefix, { tenants });
    const b = await replica(prefix, { tenants });
    const before = acmeCalls().length;
    const perMinute: number[] = [];
    for (let minute = 0; minute < 3; minute++) {
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => call500(i % 2 === 0 ? a : b)),
      );
      const ok = results.filter((x) => x === 'ok').length;
      perMinute.push(ok);
      for (const x of results) if (x !== 'ok') expect(x).toBeInstanceOf(OpenAI.RateLimitError);
      clock.advance(61_000);
    }
    // 4 calls of 500 tokens per minute at most, through both together.
    for (const n of perMinute) expect(n).toBeLessThanOrEqual(4);
    const sent = acmeCalls().slice(before);
    expect(sent.length).toBe(perMinute.reduce((x, y) => x + y, 0));
    for (const t of sent) {
      const inMinute = sent.filter((u) => u > t - 60_000 && u <= t).length;
      expect(inMinute * 500).toBeLessThanOrEqual(2000);
    }
  });

  it('a budget sized for 5 reservations: of 10 concurrent calls at most 5 go, the settled total stays within it, and a restarted replica does not reset it', async () => {
    const prefix = `t${randomBytes(4).toString('hex')}:`;
    // 300 input at $1 and 200 reserved output at $2 per million: $0.0007 reserved per call.
    const pricing = { [GPT]: { input: 1, output: 2 } };
    const reserve = 0.0007;
    const budget = 5 * reserve;
    const tenants = { acme: { budget: { usd: budget, per: 'month' as const } } };
    const stats = upstream.deployment('oai0').stats;
    const spent = () => (stats.promptTokens + 2 * stats.completionTokens) / 1e6;
    const base = { requests: stats.ok, spent: spent() };
    const a = await replica(prefix, { tenants, pricing });
    const b = await replica(prefix, { tenants, pricing });
    const first = await Promise.all(
      Array.from({ length: 10 }, (_, i) => call500(i % 2 === 0 ? a : b)),
    );
    const went = first.filter((x) => x === 'ok').length;
    expect(went).toBeLessThanOrEqual(5);
    expect(went).toBeGreaterThanOrEqual(1);
    for (const x of first) {
      if (x === 'ok') continue;
      const e = x as InstanceType<typeof OpenAI.RateLimitError>;
      expect(e).toBeInstanceOf(OpenAI.RateLimitError);
      expect(e.message).toMatch(/Tenant acme is over its budget limit/);
      // Room comes back when the UTC month ends.
      const end = new Date(clock.ms);
      const monthEnd = Date.UTC(end.getUTCFullYear(), end.getUTCMonth() + 1, 1);
      expect(Number(e.headers?.get('retry-after-ms'))).toBe(monthEnd - clock.ms);
    }

    // Replica a restarts; the budget stays where the answers settled it.
    await a.close();
    replicas.splice(replicas.indexOf(a), 1);
    const a2 = await replica(prefix, { tenants, pricing });
    const settled = spent() - base.spent;
    const left = budget - settled;
    const second = await Promise.all(Array.from({ length: 10 }, () => call500(a2)));
    const again = second.filter((x) => x === 'ok').length;
    // A reset budget would let 5 through; only what the settled spend leaves does.
    expect(again).toBeLessThanOrEqual(Math.floor((left + 1e-12) / reserve));
    expect(again).toBeLessThan(5);
    const total = spent() - base.spent;
    expect(total).toBeLessThanOrEqual(budget + 1e-12);
    expect(stats.ok - base.requests).toBe(went + again);
  });

  it("what another writer left in a tenant's hash is dropped with one log line, never counted", async () => {
    const prefix = `t${randomBytes(4).toString('hex')}:`;
    const redis = inspector(server.url);
    try {
      const bucket = Math.floor(clock.ms / 1000);
      await redis.hset(tenantKey(prefix, 'acme'), {
        [`t${bucket}`]: 'lots',
        [`r${bucket}`]: '-5',
        [`t${bucket + 10_000}`]: '1',
        junk: '1',
      });
      const logger = new RecordingLogger();
      const sb = await replica(prefix, { tenants: { acme: { tpm: 2000 } }, logger });
      const results = await Promise.all(Array.from({ length: 6 }, () => call500(sb)));
      expect(results.filter((x) => x === 'ok')).toHaveLength(4);
      const warned = logger.lines.filter((l) => /tenant count that is not a count/.test(l.message));
      expect(warned).toHaveLength(1);
      expect(await redis.hexists(tenantKey(prefix, 'acme'), 'junk')).toBe(0);
    } finally {
      redis.disconnect();
    }
  });
});

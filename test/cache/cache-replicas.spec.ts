/**
 * Two switchboards on one real redis-server share the response cache's entries; an entry another
 * writer left under the prefix is checked before it could answer anything.
 */
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { createSwitchboard, redisState, type Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { cacheKey } from '../../src/cache/cache-key';
import { eventually } from '../support/eventually';
import { RedisServer } from '../support/redis-server';
import { ask, GPT } from '../support/upstream';
import { RecordingLogger } from '../state/cluster';

const TTL = 60_000;
let server: RedisServer;
let upstream: SimulatedUpstream;
let redis: Redis;
const replicas: Switchboard[] = [];

beforeAll(async () => {
  server = await RedisServer.start();
  upstream = await SimulatedUpstream.start({ deployments: [{ name: 'oai0' }] });
  redis = new Redis(server.url);
});
afterEach(async () => {
  await Promise.all(replicas.splice(0).map((sb) => sb.close()));
  upstream.reset();
});
afterAll(async () => {
  redis.disconnect();
  await upstream.close();
  await server.close();
});

function replica(prefix: string, logger = new RecordingLogger()): Switchboard {
  const sb = createSwitchboard({
    deployments: [
      {
        provider: 'openai',
        name: 'oai0',
        baseURL: upstream.deployment('oai0').openaiBaseURL,
        apiKey: 'sk',
        models: [{ name: GPT, tpm: 10_000_000, rpm: 100_000 }],
      },
    ],
    ratelimitWindow: 0,
    logger,
    cache: { ttl: TTL },
    state: redisState({ url: server.url, prefix, syncInterval: 3_600_000 }),
  });
  replicas.push(sb);
  return sb;
}

const sent = () => upstream.deployment('oai0').stats.requests;
const keyOf = (prefix: string, content: string, tenant = '') =>
  `${prefix}cache:${cacheKey(tenant, 'chat.completions.create', ask(content))}`;

describe('the response cache across replicas (one Redis)', () => {
  it('a call answered by one replica is a hit on the other, with the same answer', async () => {
    const prefix = `c${randomBytes(4).toString('hex')}:`;
    const a = replica(prefix);
    const b = replica(prefix);
    await eventually(() => a.state.health().connection === 'ready');
    await eventually(() => b.state.health().connection === 'ready');
    const first = await a.chat.completions.create(ask('shared answer'));
    const key = keyOf(prefix, 'shared answer');
    await eventually(async () => (await redis.exists(key)) === 1);
    // The ttl is the key's expiry.
    const pttl = await redis.pttl(key);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(TTL);
    const again = await b.chat.completions.create(ask('shared answer')).withResponse();
    expect(sent()).toBe(1);
    expect(again.data).toEqual(first);
    expect(again.response.headers.get('x-switchboard-cache')).toBe('hit');
    // Redis holds digests and the answer, never the key's prompt in the clear.
    expect(key).not.toContain('shared answer');
  });

  it('a forged or corrupt entry is a miss and one log line, never an answer', async () => {
    const prefix = `c${randomBytes(4).toString('hex')}:`;
    const logger = new RecordingLogger();
    const b = replica(prefix, logger);
    await eventually(() => b.state.health().connection === 'ready');
    const forgedKey = keyOf(prefix, 'forged');
    const forged = {
      v: 1,
      key: forgedKey.slice(`${prefix}cache:`.length),
      model: GPT,
      kind: 'json',
      deployment: 'oai0',
      tags: [],
      // Longer than any ttl this replica would have written.
      expires: Date.now() + 365 * 86_400_000,
      body: JSON.stringify({ id: 'forged', choices: [{ message: { content: 'pwned' } }] }),
    };
    await redis.set(forgedKey, JSON.stringify(forged));
    await redis.set(keyOf(prefix, 'corrupt'), '{"v":1,"key":');
    const answer = await b.chat.completions.create(ask('forged'));
    expect(answer.id).not.toBe('forged');
    await b.chat.completions.create(ask('corrupt'));
    expect(sent()).toBe(2);
    const lines = logger.warnings(/response cache entry/);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/expiring later than the ttl allows/);
    expect(lines[1]).toMatch(/not JSON/);
    // Once each: a second read of the same bad key logs nothing more.
    await b.chat.completions.create(ask('corrupt', { cache: false }));
    expect(logger.warnings(/response cache entry/)).toHaveLength(2);
  });

  it('an entry of another tenant, moved under this tenant key, is refused', async () => {
    const prefix = `c${randomBytes(4).toString('hex')}:`;
    const a = replica(prefix);
    const logger = new RecordingLogger();
    const b = replica(prefix, logger);
    await eventually(() => a.state.health().connection === 'ready');
    await eventually(() => b.state.health().connection === 'ready');
    await a.chat.completions.create(ask('secret', { tenant: 'acme' }));
    const acmeKey = keyOf(prefix, 'secret', 'acme');
    await eventually(async () => (await redis.exists(acmeKey)) === 1);
    await redis.set(keyOf(prefix, 'secret', 'globex'), (await redis.get(acmeKey))!);
    const globex = await b.chat.completions
      .create(ask('secret', { tenant: 'globex' }))
      .withResponse();
    expect(globex.response.headers.get('x-switchboard-cache')).toBeNull();
    expect(sent()).toBe(2);
    expect(logger.warnings(/written for another key/)).toHaveLength(1);
  });
});

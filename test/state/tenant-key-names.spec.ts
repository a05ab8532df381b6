/**
 * What the Redis store writes names no tenant: a tenant's counts live under a hash of its id, on
 * a real redis-server; and a Redis URL is never printed with its Sentinel password.
 */
import { inspect } from 'node:util';
import { createSwitchboard, redisState } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { redactUrl } from '../../src/state/redis/redis-options';
import { tenantKey } from '../../src/state/redis/tenant-script';
import { RedisServer } from '../support/redis-server';
import { eventually } from '../support/eventually';
import { inspector } from './cluster';

const TENANT = 'acme-customer-name';

describe('tenant ids in Redis', () => {
  let server: RedisServer;
  let upstream: SimulatedUpstream;

  beforeAll(async () => {
    server = await RedisServer.start();
    upstream = await SimulatedUpstream.start({ deployments: [{ name: 'east' }] });
  });
  afterAll(async () => {
    await upstream.close();
    await server.close();
  });

  it('are hashed in key names', async () => {
    expect(tenantKey('p:', TENANT)).toMatch(/^p:tenant:[0-9a-f]{32}$/);
    const sb = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: upstream.deployment('east').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: 'gpt-4o-mini', tpm: 100_000, rpm: 1_000 }],
        },
      ],
      tenants: { [TENANT]: { rpm: 100 } },
      state: redisState({ url: server.url, prefix: 'names:' }),
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    });
    const redis = inspector(server.url);
    try {
      await eventually(() => sb.state.health().lastSync !== undefined, { what: 'Redis' });
      await sb.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'hi' }],
        tenant: TENANT,
      });
      const keys = await redis.keys('names:*');
      expect(keys).toContain(tenantKey('names:', TENANT));
      expect(keys.join('\n')).not.toContain('acme');
    } finally {
      redis.disconnect();
      await sb.close();
    }
  });
});

describe('a Redis URL with a Sentinel password', () => {
  const url = 'redis://redis:6379/0?sentinelPassword=s3ntinel-secret&sentinelUsername=sam';

  it('is redacted wherever it is printed', () => {
    expect(redactUrl(url)).toBe('redis://redis:6379/0?sentinelPassword=***&sentinelUsername=***');
    // Not started: nothing connects to it.
    const state = redisState({ url });
    expect(inspect(state, { depth: 5 })).not.toContain('s3ntinel-secret');
    expect(JSON.stringify(state)).not.toContain('s3ntinel-secret');
  });
});

/**
 * A gateway key's data stays its own: its tenant is derived from the key (a key that replaces a
 * revoked one starts with none of its spend, on the same Redis), another key reads neither its
 * spend nor its queue (an admin key reads all), its session and prompt-prefix placements are its
 * own, and the gateway passes on only an allow-list of the upstream's headers (no `set-cookie`,
 * `openai-organization` nor `x-ratelimit-*`). The sample gateway as a real Nest app, a real
 * redis-server, the OpenAI client, simulated deployments and an upstream on node:http.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { keyTenant } from '../../sample/guard/gateway-keys';
import type { Gateway } from '../../sample/main';
import { prefixKey } from '../../src/selection/cache-affinity';
import { tenantSessionKey } from '../../src/selection/session-affinity';
import { eventually } from '../support/eventually';
import { gatewayWith } from '../support/gateway';
import { RedisServer } from '../support/redis-server';

const GPT = 'gpt-4o-mini';
const A = 'first-client-key';
const B = 'second-client-key';
const ADMIN = 'operator-admin-key';
const PRICE = { input: 1_000, output: 1_000 };

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sb-privacy-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ask = (gateway: Gateway, key: string, extra: Record<string, unknown> = {}) =>
  new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 }).chat.completions
    .create({
      model: GPT,
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hello there' }],
      ...extra,
    })
    .then(
      () => 200,
      (error: { status?: number }) => error.status ?? 0,
    );

describe('spend and identity', () => {
  let redis: RedisServer;
  let upstream: SimulatedUpstream;
  let config: string;

  beforeAll(async () => {
    redis = await RedisServer.start();
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'east', tpm: 1_000_000, rpm: 10_000 }],
    });
    config = join(dir, 'budget.json');
    writeFileSync(
      config,
      JSON.stringify({
        deployments: [
          {
            provider: 'openai',
            name: 'east',
            baseURL: upstream.deployment('east').openaiBaseURL,
            apiKey: 'sk-east-deployment',
            models: [{ name: GPT, tpm: 1_000_000, rpm: 10_000 }],
          },
        ],
        pricing: { [GPT]: PRICE },
        // Every key its own budget of a few calls a day; the two named, so costs show them.
        tenants: {
          '*': { budget: { usd: 0.05, per: 'day' } },
          [keyTenant(A)]: { budget: { usd: 0.05, per: 'day' } },
          [keyTenant(B)]: { budget: { usd: 0.05, per: 'day' } },
        },
      }),
    );
  });
  afterAll(async () => {
    await upstream?.close();
    await redis?.close();
  });

  async function started(keys: string): Promise<Gateway> {
    const gateway = await gatewayWith({
      GATEWAY_API_KEYS: keys,
      GATEWAY_ADMIN_KEYS: ADMIN,
      SWITCHBOARD_CONFIG: config,
      REDIS_URL: redis.url,
    });
    const sb = gateway.app.get(Switchboard);
    await eventually(() => sb.state.health().lastSync !== undefined, { what: 'Redis' });
    return gateway;
  }

  it("a revoked key's successor starts with none of its spend; no key reads another's", async () => {
    const first = await started(`${A},${B}`);
    try {
      const statuses: number[] = [];
      while (statuses.length < 20 && statuses.at(-1) !== 429) statuses.push(await ask(first, A));
      // A spends its budget, and is refused.
      expect(statuses.at(-1)).toBe(429);
      expect(statuses.length).toBeGreaterThan(1);
      // B reads its own spend (none) and nothing of A's: neither on the status nor in metrics.
      const seen = async (key: string) => {
        const res = await fetch(`${first.url}/switchboard`, {
          headers: { authorization: `Bearer ${key}` },
        });
        return ((await res.json()) as { costs: { tenant: string }[] }).costs.map((c) => c.tenant);
      };
      expect(await seen(B)).not.toContain(keyTenant(A));
      expect(await seen(A)).toEqual([keyTenant(A)]);
      expect(await seen(ADMIN)).toContain(keyTenant(A));
      const metrics = async (key: string) =>
        (
          await fetch(`${first.url}/metrics`, { headers: { authorization: `Bearer ${key}` } })
        ).text();
      expect(await metrics(B)).not.toContain(keyTenant(A));
      expect(await metrics(ADMIN)).toContain(`tenant="${keyTenant(A)}"`);
    } finally {
      await first.close();
    }
    // A is revoked; B now comes first in the list, where A was.
    const second = await started(B);
    try {
      expect(await ask(second, B)).toBe(200);
      expect(await ask(second, A)).toBe(401);
    } finally {
      await second.close();
    }
  });
});

describe('placements', () => {
  it("two tenants' sessions and prompt prefixes are kept apart", () => {
    expect(tenantSessionKey('s-1', keyTenant(A))).not.toBe(tenantSessionKey('s-1', keyTenant(B)));
    expect(tenantSessionKey('s-1')).toBe('s-1');
    const body = { model: GPT, prompt_cache_key: 'handbook', messages: [] };
    const keys = [undefined, keyTenant(A), keyTenant(B)].map((t) => prefixKey(body, 2_000, t));
    expect(new Set(keys).size).toBe(3);
  });

  it('through the gateway, the same session id under two keys is two sessions', async () => {
    const upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'east' }, { name: 'west' }],
    });
    const config = join(dir, 'two.json');
    writeFileSync(
      config,
      JSON.stringify({
        deployments: ['east', 'west'].map((name) => ({
          provider: 'openai',
          name,
          baseURL: upstream.deployment(name).openaiBaseURL,
          apiKey: 'k',
          models: [{ name: GPT }],
        })),
      }),
    );
    const gateway = await gatewayWith({
      GATEWAY_API_KEYS: `${A},${B}`,
      SWITCHBOARD_CONFIG: config,
    });
    try {
      const sessions = gateway.app.get(Switchboard).registry.sessions;
      const before = sessions.size;
      expect(await ask(gateway, A, { session_id: 'shared-id' })).toBe(200);
      expect(await ask(gateway, B, { session_id: 'shared-id' })).toBe(200);
      expect(sessions.size).toBe(before + 2);
      expect(sessions.get('shared-id')).toBeUndefined();
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });
});

describe("the upstream's headers", () => {
  let server: Server;
  let gateway: Gateway;

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, {
          'content-type': 'application/json',
          'set-cookie': 'session=upstream-secret; HttpOnly',
          'openai-organization': 'org-upstream-tenant',
          'x-ratelimit-remaining-tokens': '12345',
          'x-ratelimit-limit-tokens': '100000',
          'x-request-id': 'req-abc',
          'x-powered-by': 'upstream',
        });
        res.end(
          JSON.stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion',
            created: 1,
            model: GPT,
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: 'hi' },
                finish_reason: 'stop',
              },
            ],
            usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
          }),
        );
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const config = join(dir, 'headers.json');
    writeFileSync(
      config,
      JSON.stringify({
        deployments: [
          {
            provider: 'openai',
            name: 'east',
            baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`,
            apiKey: 'k',
            models: [{ name: GPT }],
          },
        ],
      }),
    );
    gateway = await gatewayWith({ GATEWAY_API_KEYS: A, SWITCHBOARD_CONFIG: config });
  });
  afterAll(async () => {
    await gateway?.close();
    await new Promise((done) => server.close(done));
  });

  it('are passed on from an allow-list only', async () => {
    const client = new OpenAI({ apiKey: A, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const { data, response } = await client.chat.completions
      .create({ model: GPT, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.choices[0]!.message.content).toBe('hi');
    expect(response.headers.get('x-request-id')).toBe('req-abc');
    expect(response.headers.get('content-type')).toContain('application/json');
    for (const name of [
      'set-cookie',
      'openai-organization',
      'x-ratelimit-remaining-tokens',
      'x-ratelimit-limit-tokens',
      'x-powered-by',
    ]) {
      expect(response.headers.get(name)).toBeNull();
    }
  });
});

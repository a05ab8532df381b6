/**
 * `budgets.whenStoreDown`: while the shared store cannot be reached, a budgeted tenant's calls
 * go through on local counts (`'admit'`, the default) or are refused with a 429 that says why
 * (`'refuse'`) until the store is back. A real redis-server, stopped and started again; the
 * OpenAI client's errors; a simulated deployment.
 */
import OpenAI from 'openai';
import { createSwitchboard, redisState, type Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { eventually } from '../support/eventually';
import { RedisServer } from '../support/redis-server';

const GPT = 'gpt-4o-mini';

describe('budgets while the store is down', () => {
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

  function build(whenStoreDown?: 'admit' | 'refuse'): Switchboard {
    return createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: upstream.deployment('east').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: GPT, tpm: 1_000_000, rpm: 10_000 }],
        },
      ],
      pricing: { [GPT]: { input: 1, output: 1 } },
      tenants: { acme: { budget: { usd: 100, per: 'day' } }, free: {} },
      state: redisState({ url: server.url, prefix: `down-${whenStoreDown ?? 'default'}:` }),
      ...(whenStoreDown === undefined ? {} : { budgets: { whenStoreDown } }),
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    });
  }
  const ask = (sb: Switchboard, tenant: string) =>
    sb.chat.completions
      .create({ model: GPT, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }], tenant })
      .then(
        () => 200,
        (e: unknown) => e,
      );

  it("'refuse' refuses budgeted calls while Redis is down, and admits them once it is back", async () => {
    const sb = build('refuse');
    try {
      await eventually(() => sb.state.health().status === 'up', { what: 'Redis up' });
      expect(await ask(sb, 'acme')).toBe(200);
      await server.stop();
      await eventually(() => sb.state.health().status !== 'up', { what: 'Redis down' });
      const refused = await ask(sb, 'acme');
      expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
      expect((refused as Error).message).toContain(
        "Tenant acme: its budget cannot be checked while the shared store is down (budgets.whenStoreDown: 'refuse')",
      );
      // A tenant without a budget is not held back.
      expect(await ask(sb, 'free')).toBe(200);
      await server.restart();
      await eventually(() => sb.state.health().status === 'up', { what: 'Redis back' });
      expect(await ask(sb, 'acme')).toBe(200);
    } finally {
      await sb.close();
    }
  });

  it("the default, 'admit', lets them through on local counts", async () => {
    const sb = build();
    try {
      await eventually(() => sb.state.health().status === 'up', { what: 'Redis up' });
      await server.stop();
      await eventually(() => sb.state.health().status !== 'up', { what: 'Redis down' });
      expect(await ask(sb, 'acme')).toBe(200);
    } finally {
      await sb.close();
      await server.restart();
    }
  });
});

/**
 * Leases follow only the limits that are in force: a model with no request limit (none
 * configured, none reported by the upstream) is not held to one request per short window.
 */
import { createSwitchboard, redisState, type Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { RedisServer } from '../support/redis-server';

let redis: RedisServer;
let upstream: SimulatedUpstream;
let sb: Switchboard;

beforeAll(async () => {
  redis = await RedisServer.start();
  upstream = await SimulatedUpstream.start({ deployments: [{ name: 'a' }] });
  sb = createSwitchboard({
    deployments: [
      {
        provider: 'openai',
        name: 'a',
        baseURL: upstream.deployment('a').openaiBaseURL,
        apiKey: 'k',
        models: [{ name: 'gpt-4o-mini' }],
      },
    ],
    state: redisState({ url: redis.url }),
  });
});

afterAll(async () => {
  await sb?.close();
  await upstream?.close();
  await redis?.close();
});

it('sends every call of a model without limits, one after another, on leases', async () => {
  for (let i = 0; i < 4; i++) {
    const answer = await sb.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: `call ${i}` }],
    });
    expect(answer.choices[0]!.message.content).toContain(`call ${i}`);
  }
  expect(upstream.deployment('a').stats.requests).toBe(4);
});

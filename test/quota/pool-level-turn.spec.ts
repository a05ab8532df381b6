import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { FakeClock } from '../support/random';

/** 1 200 characters: 300 prompt tokens (+100 of cap), 400 tokens a call. */
const PROMPT = 'x'.repeat(1_200);
const MODELS = ['gpt-4o', 'gpt-4o-mini'] as const;

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Two model names on one OpenAI key, each its own project's pool under one organization of
 * 1 000 tokens a minute (a bucket): the level counts both models' calls.
 */
async function setup() {
  const clock = new FakeClock();
  const upstream = await SimulatedUpstream.start({
    clock: clock.now,
    deployments: [{ name: 'key', rules: 'openai', quota: 'friendly' }],
  });
  const sim = upstream.deployment('key');
  sim.holdAnswers();
  const sb: Switchboard = createSwitchboard({
    clock: clock.now,
    ratelimitWindow: 60_000,
    queue: { maxWait: 3_600_000 },
    quotaPools: { org: { tpm: 1_000 } },
    deployments: [
      {
        provider: 'openai',
        name: 'key',
        baseURL: sim.openaiBaseURL,
        apiKey: 'sk-key',
        models: MODELS.map((name, i) => ({
          name,
          tpm: 100_000,
          rpm: 10_000,
          quotaPool: `org/p${i}`,
          rampUp: false,
          outputReservation: 0,
        })),
      },
    ],
  });
  const call = (model: string, i: number) =>
    sb.chat.completions
      .create({
        model,
        max_tokens: 100,
        messages: [{ role: 'user', content: `${i} ${PROMPT}`.slice(0, PROMPT.length) }],
      })
      .catch(() => undefined);
  return { clock, upstream, sim, sb, call };
}

describe('a pool level above two model names, with a queue', () => {
  jest.setTimeout(30_000);
  let s: Awaited<ReturnType<typeof setup>>;
  afterEach(async () => {
    s.sim.releaseAll();
    await s.sb.close();
    await s.upstream.close();
  });

  it('lets one call through per room, whichever model line is kicked first', async () => {
    s = await setup();
    const calls = [s.call(MODELS[0], 0), s.call(MODELS[0], 1)];
    while (s.sim.heldAnswers < 2) await tick();
    // 800 of the organization's 1 000: one call of each model waits.
    calls.push(s.call(MODELS[0], 2), s.call(MODELS[1], 3));
    for (let i = 0; i < 20; i++) await tick();
    expect(s.sb.queue!.length(MODELS[0]) + s.sb.queue!.length(MODELS[1])).toBe(2);
    expect(s.sim.stats.requests).toBe(2);
    // 24 s drain 400: room for one call of 400, not two.
    s.clock.advance(24_000);
    s.sb.queue!.kick(MODELS[0]);
    s.sb.queue!.kick(MODELS[1]);
    for (let i = 0; i < 20; i++) await tick();
    process.stdout.write(
      `org of 1 000 above two model lines, room for one: ${s.sim.stats.requests - 2} sent\n`,
    );
    expect(s.sim.stats.requests).toBe(3);
    expect(s.sb.queue!.length(MODELS[0]) + s.sb.queue!.length(MODELS[1])).toBe(1);
    s.sim.releaseAll();
    s.clock.advance(60_000);
    s.sb.queue!.kick(MODELS[0]);
    s.sb.queue!.kick(MODELS[1]);
    await Promise.all(calls);
  });
});

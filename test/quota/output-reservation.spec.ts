import { createSwitchboard, type ModelConfig, type Switchboard } from 'nestjs-switchboard';
import { isNoRoom } from '../../src/quota/no-room';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { FakeClock } from '../support/random';
import { ask, GPT } from '../support/upstream';

/** An Azure deployment that reserves 4 096 output tokens for a call without max_tokens. */
async function setup(model: Partial<ModelConfig>) {
  const clock = new FakeClock();
  const upstream = await SimulatedUpstream.start({
    clock: clock.now,
    deployments: [{ name: 'oai0', tpm: 100_000, rpm: 60_000, inferredMaxTokens: 4_096 }],
  });
  const sb: Switchboard = createSwitchboard({
    clock: clock.now,
    ratelimitWindow: 60_000,
    deployments: [
      {
        provider: 'openai',
        name: 'oai0',
        baseURL: upstream.deployment('oai0').openaiBaseURL,
        apiKey: 'sk-oai0',
        models: [{ name: GPT, tpm: 100_000, rpm: 60_000, ...model }],
      },
    ],
  });
  const uncapped = () =>
    sb.chat.completions.create(ask('x')).then(
      () => 'ok',
      (e: unknown) => (isNoRoom(e) ? 'held back' : 'failed'),
    );
  return { sb, upstream, sim: upstream.deployment('oai0'), uncapped };
}

describe('calls without max_tokens', () => {
  let s: Awaited<ReturnType<typeof setup>>;
  afterEach(async () => {
    await s.sb.close();
    await s.upstream.close();
  });

  it("learn the upstream's reservation from its answers, then fill the window without 429s", async () => {
    s = await setup({});
    for (let i = 0; i < 3; i++) expect(await s.uncapped()).toBe('ok');
    const model = s.sb.deployments.get('oai0')!.models.get(GPT)!;
    expect(model.quota.outputReservation).toBe(4_096);
    const results = await Promise.all(Array.from({ length: 40 }, () => s.uncapped()));
    process.stdout.write(
      `40 uncapped after three answers: ${s.sim.stats.rateLimited} upstream 429s, ` +
        `${results.filter((r) => r === 'ok').length} ok\n`,
    );
    expect(s.sim.stats.rateLimited).toBeLessThanOrEqual(1);
    // 100 000 tokens hold 24 calls of 4 097: three went before.
    expect(results.filter((r) => r === 'ok').length).toBeGreaterThanOrEqual(20);
    expect(results.filter((r) => r === 'failed')).toEqual([]);
  });

  it('charge outputReservation from cold when it is configured', async () => {
    s = await setup({ outputReservation: 4_096 });
    const results = await Promise.all(Array.from({ length: 40 }, () => s.uncapped()));
    process.stdout.write(
      `40 uncapped from cold, outputReservation 4096: ${s.sim.stats.rateLimited} upstream 429s, ` +
        `${results.filter((r) => r === 'ok').length} ok\n`,
    );
    expect(s.sim.stats.rateLimited).toBeLessThanOrEqual(1);
    expect(results.filter((r) => r === 'ok').length).toBeGreaterThanOrEqual(23);
    expect(results.filter((r) => r === 'failed')).toEqual([]);
  });
});

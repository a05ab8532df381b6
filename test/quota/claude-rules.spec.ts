import { createSwitchboard, type Switchboard } from '../../src';
import { SimulatedUpstream, type SimulatedDeployment } from '../../src/testing';
import { FakeClock } from '../support/random';
import { CLAUDE } from '../support/upstream';

/** Virtual time moves in steps of this many ms while calls wait in the queue. */
const STEP = 100;

interface Limits {
  rpm: number;
  itpm: number;
  otpm: number;
}

/** Claude on Foundry under Anthropic's rules, and a switchboard with a queue, on one clock. */
async function setup(limits: Limits, model: Record<string, unknown> = {}) {
  const clock = new FakeClock();
  const upstream = await SimulatedUpstream.start({
    clock: clock.now,
    deployments: [{ name: 'claude0', ...limits }],
  });
  const sb: Switchboard = createSwitchboard({
    clock: clock.now,
    ratelimitWindow: 60_000,
    queue: { maxWait: 3_600_000 },
    deployments: [
      {
        provider: 'anthropic',
        name: 'claude0',
        baseURL: upstream.deployment('claude0').anthropicBaseURL,
        apiKey: 'foundry-claude0',
        models: [{ name: CLAUDE, ...limits, ...model }],
      },
    ],
  });
  const state = sb.deployments.get('claude0')!.models.get(CLAUDE)!;
  return { clock, upstream, sb, state, sim: upstream.deployment('claude0') };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("Claude's current rules", () => {
  jest.setTimeout(60_000);
  let s: Awaited<ReturnType<typeof setup>>;
  afterEach(async () => {
    await s.sb.close();
    await s.upstream.close();
  });

  /**
   * Drives `calls` to their end: while answers are held, lets them go once no more arrive; moves
   * virtual time while calls wait in the queue and none is on its way. Returns the most answers
   * held at once (calls in flight together) and when (virtual ms from now) each call ended.
   */
  async function drive(
    sim: SimulatedDeployment,
    calls: Promise<unknown>[],
  ): Promise<{ mostInFlight: number; doneAt: number[] }> {
    const start = s.clock.ms;
    const doneAt: number[] = [];
    let settled = 0;
    const all = calls.map((call) =>
      call
        .then(
          () => doneAt.push(s.clock.ms - start),
          () => undefined,
        )
        .finally(() => settled++),
    );
    let mostInFlight = 0;
    let quiet = 0;
    while (settled < calls.length && s.clock.ms - start < 120_000) {
      await tick();
      mostInFlight = Math.max(mostInFlight, sim.heldAnswers);
      if (s.state.inFlight.count > sim.heldAnswers) {
        quiet = 0;
        continue;
      }
      // Every call sent is held upstream: none is on its way.
      if (++quiet < 5) continue;
      quiet = 0;
      if (sim.heldAnswers > 0) {
        sim.releaseAll();
        sim.holdAnswers();
      } else if (s.sb.queue!.length(CLAUDE) > 0) {
        s.clock.advance(STEP);
        s.sb.queue!.kick(CLAUDE);
      }
    }
    await Promise.all(all);
    return { mostInFlight, doneAt };
  }

  it('sends a call whose max_tokens is above OTPM', async () => {
    s = await setup({ rpm: 50, itpm: 30_000, otpm: 8_000 });
    const message = await s.sb.messages.create({
      model: CLAUDE,
      max_tokens: 16_000,
      messages: [{ role: 'user', content: 'Summarise the quarter.' }],
    });
    expect(message.content[0]).toMatchObject({ type: 'text' });
    expect(s.sim.stats.ok).toBe(1);
  });

  it('keeps many calls with a large max_tokens in flight at once, without 429s', async () => {
    s = await setup({ rpm: 50, itpm: 30_000, otpm: 8_000 });
    s.sim.holdAnswers();
    const calls = Array.from({ length: 20 }, (_, i) =>
      s.sb.messages.create({
        model: CLAUDE,
        max_tokens: 4_096,
        messages: [{ role: 'user', content: `Question ${i}: what changed this week?` }],
      }),
    );
    const { mostInFlight, doneAt } = await drive(s.sim, calls);
    process.stdout.write(
      `20 calls with max_tokens 4096 on OTPM 8000: ${doneAt.length} done, ` +
        `${mostInFlight} in flight at once, ${s.sim.stats.rateLimited} upstream 429s\n`,
    );
    expect(doneAt).toHaveLength(20);
    expect(mostInFlight).toBeGreaterThanOrEqual(8);
    expect(s.sim.stats.rateLimited).toBe(0);
  });

  it('sends calls over one cached prefix without charging its reads to ITPM', async () => {
    s = await setup({ rpm: 1_000, itpm: 60_000, otpm: 80_000 });
    // 200 000 characters: a 50 000-token document, cached up to its cache_control mark.
    const document = 'd'.repeat(200_000);
    s.sim.holdAnswers();
    const calls = Array.from({ length: 10 }, (_, i) =>
      s.sb.messages.create({
        model: CLAUDE,
        max_tokens: 256,
        system: [{ type: 'text', text: document, cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: `Question ${i} about the document.` }],
      }),
    );
    const { doneAt } = await drive(s.sim, calls);
    const within = doneAt.filter((ms) => ms <= 15_000).length;
    process.stdout.write(
      `ten calls over a 50 000-token cached prefix on ITPM 60 000: ${within} of 10 within 15 s, ` +
        `${s.sim.stats.rateLimited} upstream 429s\n`,
    );
    expect(within).toBe(10);
    expect(s.sim.stats.rateLimited).toBe(0);
  });
});

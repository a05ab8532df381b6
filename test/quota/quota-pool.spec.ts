import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { allAnswered } from '../support/answered';
import { FakeClock } from '../support/random';
import { CLAUDE } from '../support/upstream';

/** Virtual time moves in steps of this many ms. */
const STEP = 100;
/** The pool's input tokens per minute: one bucket for both regions. */
const ITPM = 60_000;
/** 6 000 characters: 1 500 input tokens; 40 such calls empty the pool. */
const BIG = 'x'.repeat(6_000);
/** 600 characters: 150 input tokens; one every 100 ms is 150 % of the pool's ITPM. */
const SMALL = 'x'.repeat(600);
const REGIONS = ['claude-east', 'claude-west'] as const;

/**
 * Two Foundry regions drawing on one subscription's quota (the simulated upstream's pool), and a
 * switchboard with a queue that counts them as one pool (`pooled`) or each alone; one clock.
 */
async function setup(pooled: boolean) {
  const clock = new FakeClock();
  const upstream = await SimulatedUpstream.start({
    clock: clock.now,
    deployments: REGIONS.map((name) => ({ name, rpm: 10_000, itpm: ITPM, quotaPool: 'sub' })),
  });
  const sb: Switchboard = createSwitchboard({
    clock: clock.now,
    ratelimitWindow: 60_000,
    queue: { maxWait: 3_600_000 },
    deployments: REGIONS.map((name) => ({
      provider: 'anthropic' as const,
      name,
      baseURL: upstream.deployment(name).anthropicBaseURL,
      apiKey: `foundry-${name}`,
      models: [{ name: CLAUDE, rpm: 10_000, itpm: ITPM, ...(pooled ? { quotaPool: 'sub' } : {}) }],
    })),
  });
  const states = REGIONS.map((name) => sb.deployments.get(name)!.models.get(CLAUDE)!);
  const sims = REGIONS.map((name) => upstream.deployment(name));
  return { clock, upstream, sb, states, sims };
}

type Setup = Awaited<ReturnType<typeof setup>>;

const settle = (s: Setup): Promise<void> => allAnswered(s.states);

/**
 * Empties the pool with a burst, then sends one 150-token call every 100 ms for `seconds` (150 %
 * of the pool's ITPM) and moves time until every call is answered. Returns the calls sent
 * upstream, the upstream 429s among them, and the callers' failures.
 */
async function run(s: Setup, seconds: number) {
  const calls: Promise<unknown>[] = [];
  let failed = 0;
  const send = (i: number, prompt: string): void => {
    const call = s.sb.messages.create({
      model: CLAUDE,
      max_tokens: 16,
      messages: [{ role: 'user', content: `${i} ${prompt}`.slice(0, prompt.length) }],
    });
    calls.push(call.catch(() => (failed += 1)));
  };
  for (let i = 0; i < 40; i++) send(i, BIG);
  await settle(s);
  const start = s.clock.ms;
  let i = 1_000;
  let done = false;
  void Promise.all(calls).then(() => (done = true));
  while (s.clock.ms - start < seconds * 1_000 + 120_000) {
    s.clock.advance(STEP);
    if (s.clock.ms - start <= seconds * 1_000) {
      send(i++, SMALL);
      done = false;
      void Promise.all(calls).then(() => (done = true));
    }
    s.sb.queue!.kick(CLAUDE);
    await settle(s);
    if (s.clock.ms - start > seconds * 1_000 && done && s.sb.queue!.length(CLAUDE) === 0) break;
  }
  await Promise.all(calls);
  const sent = s.sims.reduce((n, sim) => n + sim.stats.requests, 0);
  const rejected = s.sims.reduce((n, sim) => n + sim.stats.rateLimited, 0);
  const answered = s.sims.reduce((n, sim) => n + sim.stats.ok, 0);
  return { sent, rejected, answered, failed, calls: calls.length };
}

describe('quota pools', () => {
  jest.setTimeout(60_000);
  let s: Setup | undefined;
  afterEach(async () => {
    await s?.sb.close();
    await s?.upstream.close();
    s = undefined;
  });

  it('two regions on one pool at 150 % of its ITPM: at most 1 % of sent calls get a 429', async () => {
    s = await setup(true);
    const r = await run(s, 20);
    process.stdout.write(
      `one pool, two regions, 150 % for 20 s: ${r.rejected} upstream 429s of ${r.sent} sent ` +
        `(${((100 * r.rejected) / r.sent).toFixed(1)} %), ${r.answered} answered, ${r.failed} failed\n`,
    );
    expect(r.answered).toBe(r.calls);
    expect(r.failed).toBe(0);
    expect(r.rejected).toBeLessThanOrEqual(r.sent * 0.01);
  });

  it("counted per region instead, the same load meets the pool's 429s", async () => {
    s = await setup(false);
    const r = await run(s, 20);
    process.stdout.write(
      `each region alone, 150 % for 20 s: ${r.rejected} upstream 429s of ${r.sent} sent ` +
        `(${((100 * r.rejected) / r.sent).toFixed(1)} %), ${r.answered} answered, ${r.failed} failed\n`,
    );
    expect(r.rejected).toBeGreaterThan(r.sent * 0.01);
  });

  it("one call admitted in a region charges the pool, and any member's answer corrects it", async () => {
    s = await setup(true);
    const [east, west] = s.states as [(typeof s.states)[0], (typeof s.states)[0]];
    expect(east.quota).toBe(west.quota);
    // Another application takes half of the pool through the east region.
    expect(s.sims[0]!.consume({ family: 'anthropic', inputTokens: 30_000 }).admitted).toBe(true);
    expect(
      s.sims[1]!.rateLimitHeaders('anthropic')['anthropic-ratelimit-input-tokens-remaining'],
    ).toBe(30_000);
    await s.sb.messages.create({
      model: CLAUDE,
      max_tokens: 16,
      messages: [{ role: 'user', content: BIG }],
    });
    // Whichever region answered, its headers showed the pool's count: both see it.
    expect(east.quota.anchoredUsage().itpm).toBeGreaterThanOrEqual(31_000);
    expect(west.util).toBeCloseTo(east.util, 6);
    expect(east.util).toBeGreaterThan(0.5);
  });

  it('refuses members whose limits or providers differ, naming both', () => {
    const member = (name: string, itpm: number) => ({
      provider: 'anthropic' as const,
      name,
      baseURL: 'http://127.0.0.1:2/anthropic/',
      models: [{ name: CLAUDE, itpm, quotaPool: 'sub' }],
    });
    expect(() =>
      createSwitchboard({ deployments: [member('east', 60_000), member('west', 40_000)] }),
    ).toThrow(
      /deployments\[1\]\.models\[0\]\.itpm is 40000 for 'claude-sonnet-5' on 'west' but 60000 for 'claude-sonnet-5' on 'east' \(deployments\[0\]\.models\[0\]\), both in quota pool 'sub'/,
    );
    expect(() =>
      createSwitchboard({
        deployments: [
          member('east', 60_000),
          {
            provider: 'openai',
            name: 'azure',
            baseURL: 'http://127.0.0.1:2/openai/v1/',
            models: [{ name: 'gpt-4o', itpm: 60_000, quotaPool: 'sub' }],
          },
        ],
      }),
    ).toThrow(
      /quota pool 'sub' with 'claude-sonnet-5' on 'east' \(anthropic.*a pool belongs to one provider/,
    );
  });

  it('the simulated upstream refuses pool members with different limits', async () => {
    await expect(
      SimulatedUpstream.start({
        deployments: [
          { name: 'east', itpm: 60_000, quotaPool: 'sub' },
          { name: 'west', itpm: 40_000, quotaPool: 'sub' },
        ],
      }),
    ).rejects.toThrow(/deployments\[1\]\.itpm differs from deployments\[0\]\.itpm/);
  });
});

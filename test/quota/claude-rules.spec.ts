import { createSwitchboard } from 'nestjs-switchboard';
import type { Admission } from '../../src/quota/admission';
import { START_OUTPUT_ESTIMATE } from '../../src/quota/output-estimate';
import { QuotaLedger } from '../../src/quota/quota-ledger';
import type { SimulatedDeployment } from 'nestjs-switchboard/testing';
import { oneDeployment } from '../support/one-deployment';
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
  return oneDeployment('anthropic', limits, { name: CLAUDE, ...limits, ...model });
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
      `20 calls with max_tokens 4096 on OTPM 8000: ${doneAt.length} done, the last after ` +
        `${Math.max(...doneAt)} ms, ${mostInFlight} in flight at once, ` +
        `${s.sim.stats.rateLimited} upstream 429s\n`,
    );
    expect(doneAt).toHaveLength(20);
    // All within a 10-s queue's wait (the queue's own timer runs in real time: told by the clock).
    expect(Math.max(...doneAt)).toBeLessThanOrEqual(10_000);
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

describe("Claude's charges, per deployment", () => {
  const prefix = { key: 'cache:handbook', tokens: 50_000 };
  const ledger = (cacheReadsCountInput?: boolean) =>
    new QuotaLedger(
      { itpm: 60_000, otpm: 8_000, ...(cacheReadsCountInput ? { cacheReadsCountInput } : {}) },
      new FakeClock().now,
      { upstream: 'anthropic' },
    );

  it('charges the output recent answers produced, at most the cap, settled to the real one', () => {
    const quota = ledger();
    const first: Admission = { input: 10, output: 4_096 };
    quota.admit(first);
    expect(first.output).toBe(START_OUTPUT_ESTIMATE);
    quota.settle(first, { input: 10, output: 100 });
    expect(quota.ioUsage().output).toBe(100);
    const next: Admission = { input: 10, output: 4_096 };
    quota.admit(next);
    expect(next.output).toBe(100);
    const small: Admission = { input: 10, output: 40 };
    quota.admit(small);
    expect(small.output).toBe(40);
  });

  it('leaves a prefix cached on the deployment out of the input charge, once an answer shows it', () => {
    const quota = ledger();
    const cold: Admission = { input: 50_010, output: 10, cachePrefix: prefix };
    quota.admit(cold);
    expect(cold.input).toBe(50_010);
    quota.settle(cold, { input: 10, output: 10, cacheWrite: 50_000 });
    const warm: Admission = { input: 50_010, output: 10, cachePrefix: prefix };
    expect(quota.hasRoom(warm)).toBe(true);
    quota.admit(warm);
    expect(warm.input).toBe(10);
    quota.settle(warm, { input: 10, output: 10, cacheRead: 50_000 });
    // The write counted, the read did not.
    expect(quota.ioUsage().input).toBe(50_020);
  });

  it('keeps the old rule for a model with cacheReadsCountInput', () => {
    const quota = ledger(true);
    const cold: Admission = { input: 50_010, output: 10, cachePrefix: prefix };
    quota.admit(cold);
    quota.settle(cold, { input: 10, output: 10, cacheWrite: 50_000 });
    const warm: Admission = { input: 50_010, output: 10, cachePrefix: prefix };
    expect(quota.hasRoom(warm)).toBe(false);
    quota.admit(warm);
    expect(warm.input).toBe(50_010);
    quota.settle(warm, { input: 10, output: 10, cacheRead: 50_000 });
    expect(quota.ioUsage().input).toBe(100_020);
  });

  it('refuses a cacheReadsCountInput that is not a boolean, naming the field', () => {
    const build = () =>
      createSwitchboard({
        deployments: [
          {
            provider: 'anthropic',
            name: 'f0',
            baseURL: 'http://127.0.0.1:1/anthropic',
            apiKey: 'k',
            models: [{ name: CLAUDE, cacheReadsCountInput: 'yes' as unknown as boolean }],
          },
        ],
      });
    expect(build).toThrow(/models\[0\]\.cacheReadsCountInput must be true or false/);
  });
});

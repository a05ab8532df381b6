import type { ModelConfig } from 'nestjs-switchboard';
import type { SimulatedDeploymentOptions } from 'nestjs-switchboard/testing';
import { oneDeployment } from '../support/one-deployment';
import { ask, GPT } from '../support/upstream';

/** Virtual time moves in steps of this many ms while calls wait in the queue. */
const STEP = 50;

/**
 * One Azure deployment enforcing requests over a short window, and a switchboard with a queue,
 * on one clock the test moves: the queue's own timers run in real time and would only wake it
 * later, so each step kicks it. Time moves only while no call is on its way, as calls reach the
 * upstream within a few ms of being sent.
 */
async function setup(simulated: Omit<SimulatedDeploymentOptions, 'name'>, model: ModelConfig) {
  const { clock, upstream, sim, sb, state } = await oneDeployment(
    'openai',
    { tpm: 10_000_000, ...simulated },
    model,
  );
  /** Sends `n` calls at once; returns, per call, the virtual ms it took, or -1 when it failed. */
  async function wave(n: number): Promise<number[]> {
    const start = clock.ms;
    const done: number[] = Array(n).fill(-2);
    const calls = Array.from({ length: n }, (_, i) =>
      sb.chat.completions.create(ask(`call ${i}`, { max_tokens: 10 })).then(
        () => (done[i] = clock.ms - start),
        () => (done[i] = -1),
      ),
    );
    let settled = false;
    void Promise.all(calls).then(() => (settled = true));
    while (!settled) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (done.every((d) => d !== -2)) break;
      // Time moves once every call sent has been answered: none is on its way meanwhile.
      if (sb.queue!.length(GPT) > 0 && state.inFlight.count === 0) {
        clock.advance(STEP);
        sb.queue!.kick(GPT);
      }
    }
    await Promise.all(calls);
    return done;
  }
  return {
    sb,
    clock,
    sim,
    wave,
    close: async () => {
      await sb.close();
      await upstream.close();
    },
  };
}

describe('request windows', () => {
  jest.setTimeout(60_000);
  let s: Awaited<ReturnType<typeof setup>>;
  afterEach(() => s.close());

  it.each([
    ['configured', { requestWindow: '1s' as const }],
    ['learned from one earlier answer', {}],
  ])('paces 100 calls on 600 RPM enforced per second, requestWindow %s', async (how, extra) => {
    s = await setup(
      { rpm: 600, requestWindow: '1s' },
      { name: GPT, rpm: 600, tpm: 10_000_000, ...extra },
    );
    if (how !== 'configured') {
      expect(await s.wave(1)).toEqual([0]);
      s.clock.advance(1_000);
    }
    const before = s.sim.stats.rateLimited;
    const done = await s.wave(100);
    process.stdout.write(
      `600 RPM per second, requestWindow ${how}: ${done.filter((d) => d >= 0).length} of 100 ` +
        `done, ${s.sim.stats.rateLimited - before} upstream 429s, last at ${Math.max(...done)} ms\n`,
    );
    expect(done.filter((d) => d < 0)).toEqual([]);
    expect(s.sim.stats.rateLimited - before).toBeLessThanOrEqual(2);
    // Ten a second, less what the window's edges cost: 100 calls well within 20 s.
    expect(Math.max(...done)).toBeLessThan(20_000);
  });

  it('learns the 1 s window from a 429 that says the call rate limit was hit', async () => {
    s = await setup({ rpm: 600, requestWindow: '1s' }, { name: GPT, rpm: 600, tpm: 10_000_000 });
    // Another application filled the upstream's second: our first call meets Azure's 429, whose
    // headers say nothing of the window's limit, only its words and retry-after-ms do.
    expect(s.sim.consume({ requests: 10 }).admitted).toBe(true);
    const state = s.sb.deployments.get('oai0')!.models.get(GPT)!;
    expect(state.quota.burst.period).toBe('10s');
    // With one deployment, the refused call is the caller's 429.
    expect(await s.wave(1)).toEqual([-1]);
    expect(s.sim.stats.rateLimited).toBeGreaterThan(0);
    expect(state.quota.burst.period).toBe('1s');
    s.clock.advance(1_000);
    const before = s.sim.stats.rateLimited;
    const done = await s.wave(100);
    process.stdout.write(
      `600 RPM per second, requestWindow taught by a 429: ${done.filter((d) => d >= 0).length} ` +
        `of 100 done, ${s.sim.stats.rateLimited - before} upstream 429s\n`,
    );
    expect(done.filter((d) => d < 0)).toEqual([]);
    expect(s.sim.stats.rateLimited - before).toBeLessThanOrEqual(2);
    expect(Math.max(...done)).toBeLessThan(20_000);
  });

  it.each([
    ['configured', { requestWindow: '1s' as const }],
    ['learned from a 429', {}],
  ])(
    "paces 100 calls on OpenAI's 600 RPM enforced per second, requestWindow %s",
    async (how, extra) => {
      s = await setup(
        { rules: 'openai', rpm: 600, requestWindow: '1s' },
        { name: GPT, rpm: 600, tpm: 10_000_000, ...extra },
      );
      expect(await s.wave(1)).toEqual([0]);
      s.clock.advance(1_000);
      const before = s.sim.stats.rateLimited;
      const done = await s.wave(100);
      const refused = s.sim.stats.rateLimited - before;
      process.stdout.write(
        `OpenAI, 600 RPM per second, requestWindow ${how}: ${done.filter((d) => d >= 0).length} ` +
          `of 100 done, ${refused} upstream 429s after the first answer, last at ${Math.max(...done)} ms\n`,
      );
      const state = s.sb.deployments.get('oai0')!.models.get(GPT)!;
      expect(state.quota.upstream).toBe('openai');
      expect(state.quota.burst.period).toBe('1s');
      expect(refused).toBeLessThanOrEqual(2);
      // With a single deployment a refused call is the caller's: at most those failed.
      expect(done.filter((d) => d < 0).length).toBeLessThanOrEqual(refused);
      expect(Math.max(...done)).toBeLessThan(20_000);
    },
  );

  it('learns 120 RPM from a 10 s limit of 20 and takes 20 at once', async () => {
    s = await setup({ rpm: 120 }, { name: GPT, tpm: 10_000_000 });
    expect(await s.wave(1)).toEqual([0]);
    s.clock.advance(10_000);
    const done = await s.wave(30);
    process.stdout.write(
      `120 RPM as 20 per 10 s, rpm learned: ${done.filter((d) => d >= 0 && d <= 2_000).length} ` +
        `of 30 done within 2 s, ${s.sim.stats.rateLimited} upstream 429s\n`,
    );
    expect(done.filter((d) => d < 0)).toEqual([]);
    expect(done.filter((d) => d <= 2_000).length).toBeGreaterThanOrEqual(15);
    expect(s.sim.stats.rateLimited).toBe(0);
  });
});

import { Ramp } from '../../src/quota/ramp';
import { oneDeployment } from '../support/one-deployment';
import { ask, CLAUDE, GPT } from '../support/upstream';

/** Virtual time moves in steps of this many ms while calls wait in the queue. */
const STEP = 100;
/** 1 600 characters: 400 prompt tokens; with `max_tokens` 100, 500 tokens a call. */
const PROMPT = 'x'.repeat(1_600);
const LIMITS = { rpm: 10_000, tpm: 60_000, itpm: 60_000, otpm: 60_000 };

describe('Ramp', () => {
  const plan = { start: 1 / 6, ms: 30_000, idleMs: 120_000 };

  it('lets a first call of any size pass, then holds a sixth of the bucket above it', () => {
    const ramp = new Ramp(plan);
    expect(ramp.room('tokens', 60_000, 0, 0)).toBe(Infinity);
    ramp.admitted('tokens', 50_000, 0);
    // A call the cached prefix makes nearly free still fits above the first.
    expect(ramp.room('tokens', 60_000, 50_000, 0)).toBe(10_000);
    expect(ramp.wait('tokens', 60_000, 50_000, 10_000, 0)).toBe(0);
    expect(ramp.wait('tokens', 60_000, 60_000, 1, 0)).toBeGreaterThan(0);
  });

  it('widens linearly to the whole bucket and says when a charge fits', () => {
    const ramp = new Ramp(plan);
    ramp.admitted('input', 500, 0);
    expect(ramp.share(0)).toBeCloseTo(1 / 6);
    expect(ramp.share(15_000)).toBeCloseTo(1 / 6 + 5 / 12);
    expect(ramp.share(30_000)).toBe(1);
    expect(ramp.room('input', 60_000, 10_500, 30_000)).toBe(Infinity);
    // 10 500 of ours at the start fill the step; 1 000 more fits once our count drained (1 a ms)
    // and the step widened (50 000 over 30 s) by 1 000 together: after 375 ms.
    expect(ramp.room('input', 60_000, 10_500, 0)).toBe(0);
    expect(ramp.wait('input', 60_000, 10_500, 1_000, 0)).toBeCloseTo(375);
    expect(ramp.room('input', 60_000, 10_500 - 375, 375)).toBeCloseTo(1_000);
    expect(ramp.room('input', 60_000, 10_500 - 325, 325)).toBeLessThan(1_000);
  });

  it('starts again after idleMs without a call, not after less', () => {
    const ramp = new Ramp(plan);
    ramp.admitted('tokens', 500, 0);
    ramp.admitted('tokens', 500, 100_000);
    expect(ramp.share(100_000 + plan.idleMs)).toBe(1);
    expect(ramp.share(100_001 + plan.idleMs)).toBeCloseTo(1 / 6);
    ramp.admitted('tokens', 700, 100_001 + plan.idleMs);
    expect(ramp.room('tokens', 60_000, 700, 100_001 + plan.idleMs)).toBeCloseTo(10_000);
  });
});

describe('ramps over real HTTP', () => {
  jest.setTimeout(60_000);

  async function setup(provider: 'openai' | 'anthropic', rampUp?: boolean, set = LIMITS) {
    const model = provider === 'openai' ? GPT : CLAUDE;
    const limits =
      provider === 'openai'
        ? { rpm: set.rpm, tpm: set.tpm }
        : { rpm: set.rpm, itpm: set.itpm, otpm: set.otpm };
    const s = await oneDeployment(
      provider,
      provider === 'openai' ? { rules: 'openai', ...limits } : limits,
      { name: model, ...limits, ...(rampUp === undefined ? {} : { rampUp }) },
    );
    const call = (i: number): Promise<unknown> =>
      provider === 'openai'
        ? s.sb.chat.completions.create(ask(`${i} ${PROMPT}`.slice(0, 1_600), { max_tokens: 100 }))
        : s.sb.messages.create({
            model,
            max_tokens: 100,
            messages: [{ role: 'user', content: `${i} ${PROMPT}`.slice(0, 1_600) }],
          });
    /**
     * Sends `n` calls at once and moves virtual time while they wait in the queue and none is on
     * its way. Returns how many reached the upstream within a second of the first, how many were
     * done, and the virtual ms the last took.
     */
    async function wave(first: number, n: number) {
      const start = s.clock.ms;
      const sentBefore = s.sim.stats.requests;
      let done = 0;
      let failed = 0;
      const calls = Array.from({ length: n }, (_, i) =>
        call(first + i).then(
          () => done++,
          () => failed++,
        ),
      );
      let firstSecond = -1;
      while (done + failed < n && s.clock.ms - start < 600_000) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (s.sb.queue!.length(model) > 0 && s.state.inFlight.count === 0) {
          if (firstSecond < 0 && s.sim.stats.requests > sentBefore) {
            // Time moves on from the first send: what went out so far went within its second.
            firstSecond = s.sim.stats.requests - sentBefore;
            s.clock.advance(1_000 - STEP);
          }
          s.clock.advance(STEP);
          s.sb.queue!.kick(model);
        }
      }
      await Promise.all(calls);
      if (firstSecond < 0) firstSecond = s.sim.stats.requests - sentBefore;
      return { firstSecond, done, failed, ms: s.clock.ms - start };
    }
    return { ...s, wave };
  }

  let s: Awaited<ReturnType<typeof setup>>;
  afterEach(async () => {
    await s.sb.close();
    await s.upstream.close();
  });

  it.each([['openai' as const], ['anthropic' as const]])(
    'sends 100 calls at once on a cold %s deployment in growing steps, with no upstream 429',
    async (provider) => {
      s = await setup(provider);
      const r = await s.wave(0, 100);
      process.stdout.write(
        `${provider}, cold, 100 calls of 500 tokens at once on a 60 000 bucket: ${r.firstSecond} ` +
          `sent in the first second, ${r.done} done in ${r.ms} ms, ` +
          `${s.sim.stats.rateLimited} upstream 429s\n`,
      );
      // The first call and a sixth of the bucket above it: 1 + 20 calls of 500 tokens on
      // OpenAI (prompt and max_tokens), 1 + 25 of 400 on Claude (its input bucket).
      expect(r.firstSecond).toBeLessThanOrEqual(provider === 'openai' ? 21 : 26);
      expect(r.firstSecond).toBeGreaterThanOrEqual(15);
      expect(r.done).toBe(100);
      expect(s.sim.stats.rateLimited).toBe(0);
      expect(r.ms).toBeLessThan(30_000);
    },
  );

  it('sends the whole bucket at once with rampUp: false', async () => {
    s = await setup('openai', false);
    const r = await s.wave(0, 100);
    expect(r.firstSecond).toBe(100);
    expect(r.done).toBe(100);
  });

  it('ramps again after two idle minutes, not after one', async () => {
    s = await setup('openai');
    expect((await s.wave(0, 100)).done).toBe(100);
    // A minute later the bucket is full again and the deployment was busy a minute ago.
    s.clock.advance(60_000);
    const soon = await s.wave(100, 100);
    expect(soon.firstSecond).toBe(100);
    s.clock.advance(121_000);
    const idle = await s.wave(200, 100);
    process.stdout.write(
      `openai, after 60 s idle: ${soon.firstSecond} of 100 in the first second; after 121 s: ` +
        `${idle.firstSecond}, ${s.sim.stats.rateLimited} upstream 429s\n`,
    );
    expect(idle.firstSecond).toBeLessThanOrEqual(21);
    expect(idle.done).toBe(100);
    expect(s.sim.stats.rateLimited).toBe(0);
  });

  it('ramps the requests again after two idle minutes, as after a cold start', async () => {
    // 600 RPM: the request step holds one second's 10 and one more; the tokens never bind.
    s = await setup('openai', undefined, { ...LIMITS, rpm: 600, tpm: 6_000_000 });
    const cold = await s.wave(0, 100);
    s.clock.advance(60_000);
    const soon = await s.wave(100, 100);
    s.clock.advance(121_000);
    const idle = await s.wave(200, 100);
    process.stdout.write(
      `openai 600 RPM, requests in the first second: cold ${cold.firstSecond}, after 60 s ` +
        `${soon.firstSecond}, after 121 s idle ${idle.firstSecond}\n`,
    );
    expect(cold.firstSecond).toBe(11);
    expect(soon.firstSecond).toBe(100);
    expect(idle.firstSecond).toBe(11);
    expect(idle.done).toBe(100);
    expect(s.sim.stats.rateLimited).toBe(0);
  });

  it("sends a queue's backlog through the ramp when the deployment comes back", async () => {
    s = await setup('anthropic');
    expect((await s.wave(0, 10)).done).toBe(10);
    // Held off for three minutes (a quota cooldown): 100 calls queue meanwhile.
    s.state.markDown(180_000, 'quota exhausted');
    const r = await s.wave(10, 100);
    process.stdout.write(
      `anthropic, 100 calls queued through a 180-s cooldown: ${r.firstSecond} sent in the first ` +
        `second after it, ${r.done} done, ${s.sim.stats.rateLimited} upstream 429s\n`,
    );
    expect(r.ms).toBeGreaterThanOrEqual(180_000);
    // The first call and 25 of 400 input tokens above it, as from cold.
    expect(r.firstSecond).toBeLessThanOrEqual(26);
    expect(r.done).toBe(100);
    expect(s.sim.stats.rateLimited).toBe(0);
  });
});

import { oneDeployment } from '../support/one-deployment';
import { ask, CLAUDE, GPT } from '../support/upstream';

/** Virtual time moves in steps of this many ms while calls wait in the queue. */
const STEP = 100;
/** 6 000 characters: 1 500 input tokens a call; 40 empty a 60 000-ITPM bucket. */
const PROMPT = 'x'.repeat(6_000);

/** Claude on Foundry with a 60 000-ITPM bucket, and a switchboard with a queue, on one clock. */
async function claude() {
  const limits = { rpm: 10_000, itpm: 60_000 };
  const s = await oneDeployment('anthropic', limits, { name: CLAUDE, ...limits });
  const { sb } = s;
  const call = (i: number) =>
    sb.messages.create({
      model: CLAUDE,
      max_tokens: 16,
      messages: [{ role: 'user', content: `${i} ${PROMPT}`.slice(0, PROMPT.length) }],
    });
  return { ...s, model: CLAUDE, call };
}

/**
 * OpenAI's own API with a 60 000-TPM bucket (its address has no `/openai/` segment, as
 * api.openai.com's), and a switchboard with a queue, on one clock.
 */
async function openai() {
  const limits = { rpm: 10_000, tpm: 60_000 };
  const s = await oneDeployment('openai', { rules: 'openai', ...limits }, { name: GPT, ...limits });
  const { sb } = s;
  // 1 500 prompt tokens and 16 of output cap: 39 calls empty the bucket.
  const call = (i: number) =>
    sb.chat.completions.create(ask(`${i} ${PROMPT}`.slice(0, PROMPT.length), { max_tokens: 16 }));
  return { ...s, model: GPT, call };
}

describe('token buckets', () => {
  jest.setTimeout(60_000);
  let s: Awaited<ReturnType<typeof claude>>;
  afterEach(async () => {
    await s.sb.close();
    await s.upstream.close();
  });

  /** Sends `n` calls at once and moves time until all are answered: ms each took (virtual). */
  async function wave(first: number, n: number): Promise<number[]> {
    const start = s.clock.ms;
    const done: number[] = [];
    const calls = Array.from({ length: n }, (_, i) =>
      (s.call(first + i) as Promise<unknown>).then(() => done.push(s.clock.ms - start)),
    );
    while (done.length < n && s.clock.ms - start < 120_000) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      // Time moves once every call sent has been answered: none is on its way meanwhile.
      if (s.sb.queue!.length(s.model) > 0 && s.state.inFlight.count === 0) {
        s.clock.advance(STEP);
        s.sb.queue!.kick(s.model);
      }
    }
    await Promise.all(calls);
    return done;
  }

  /** One call, then past the ramp of a cold start: a burst may empty the bucket now. */
  async function warm(): Promise<void> {
    await wave(1_000, 1);
    s.clock.advance(31_000);
  }

  it('lets queued calls in as the emptied bucket refills, not a minute later', async () => {
    s = await claude();
    await warm();
    // The burst: as many calls as the bucket holds.
    await wave(0, 40);
    const done = await wave(100, 20);
    const within = done.filter((ms) => ms <= 25_000).length;
    process.stdout.write(
      `after an emptied 60 000-ITPM bucket: ${within} of 20 queued calls within 25 s, ` +
        `${s.sim.stats.rateLimited} upstream 429s\n`,
    );
    expect(within).toBeGreaterThanOrEqual(15);
    expect(s.sim.stats.rateLimited).toBeLessThanOrEqual(1);
  });

  it("fills OpenAI's token bucket as it refills, with no upstream 429", async () => {
    s = (await openai()) as unknown as typeof s;
    expect(s.state.quota.upstream).toBe('openai');
    await warm();
    await wave(0, 39);
    const done = await wave(100, 20);
    const within = done.filter((ms) => ms <= 25_000).length;
    process.stdout.write(
      `after an emptied 60 000-TPM OpenAI bucket: ${within} of 20 queued calls within 25 s, ` +
        `${s.sim.stats.rateLimited} upstream 429s\n`,
    );
    expect(within).toBeGreaterThanOrEqual(15);
    expect(s.sim.stats.rateLimited).toBe(0);
  });
});

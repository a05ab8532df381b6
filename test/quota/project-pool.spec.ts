import { createSwitchboard, type ModelConfig, type Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { allAnswered, upstreamCounts } from '../support/answered';
import { FakeClock } from '../support/random';
import { GPT } from '../support/upstream';

/** Virtual time moves in steps of this many ms. */
const STEP = 100;
/** The project's tokens per minute: one bucket for both keys. */
const TPM = 60_000;
/** 6 000 characters: 1 500 prompt tokens (+16 of cap); 39 such calls empty the project. */
const BIG = 'x'.repeat(6_000);
/** 600 characters: 150 prompt tokens (+16); one every 100 ms is 166 % of the project's TPM. */
const SMALL = 'x'.repeat(600);
const KEYS = ['key-a', 'key-b'] as const;

/**
 * Two OpenAI deployments (two keys) of one project, whose limits OpenAI sets per project (the
 * simulated upstream's pool: one set of buckets), and a switchboard with a queue configured by
 * `model`; one clock.
 */
async function setup(model: Omit<ModelConfig, 'name'>) {
  const clock = new FakeClock();
  const upstream = await SimulatedUpstream.start({
    clock: clock.now,
    deployments: KEYS.map((name) => ({
      name,
      rules: 'openai' as const,
      rpm: 10_000,
      tpm: TPM,
      quotaPool: 'project',
    })),
  });
  const sb: Switchboard = createSwitchboard({
    clock: clock.now,
    ratelimitWindow: 60_000,
    queue: { maxWait: 3_600_000 },
    deployments: KEYS.map((name) => ({
      provider: 'openai' as const,
      name,
      baseURL: upstream.deployment(name).openaiBaseURL,
      apiKey: `sk-${name}`,
      models: [{ name: GPT, rpm: 10_000, ...model }],
    })),
  });
  const states = KEYS.map((name) => sb.deployments.get(name)!.models.get(GPT)!);
  const sims = KEYS.map((name) => upstream.deployment(name));
  return { clock, upstream, sb, states, sims };
}

type Setup = Awaited<ReturnType<typeof setup>>;

const settle = (s: Setup): Promise<void> => allAnswered(s.states);

/**
 * Empties the project with a burst, then sends one small call every 100 ms for `seconds` and moves
 * time until every call is answered: the calls sent upstream, the 429s among them, the failures.
 */
async function run(s: Setup, seconds: number) {
  const calls: Promise<unknown>[] = [];
  let failed = 0;
  const send = (i: number, prompt: string): void => {
    const text = `${i} ${prompt}`.slice(0, prompt.length);
    const call = s.sb.chat.completions.create({
      model: GPT,
      max_tokens: 16,
      messages: [{ role: 'user', content: text }],
    });
    calls.push(call.catch(() => (failed += 1)));
  };
  for (let i = 0; i < 39; i++) send(i, BIG);
  await settle(s);
  const start = s.clock.ms;
  let i = 1_000;
  while (s.clock.ms - start < seconds * 1_000 + 120_000) {
    s.clock.advance(STEP);
    if (s.clock.ms - start <= seconds * 1_000) send(i++, SMALL);
    s.sb.queue!.kick(GPT);
    await settle(s);
    if (s.clock.ms - start > seconds * 1_000 && s.sb.queue!.length(GPT) === 0) break;
  }
  await Promise.all(calls);
  const { sent, rejected } = upstreamCounts(s.sims);
  return { sent, rejected, failed, calls: calls.length };
}

describe("an OpenAI project's limit shared by two keys", () => {
  jest.setTimeout(60_000);
  let s: Setup | undefined;
  afterEach(async () => {
    await s?.sb.close();
    await s?.upstream.close();
    s = undefined;
  });

  it.each([
    ['one quotaPool path, each at the project limit', { tpm: TPM, quotaPool: 'org/project' }],
    ['split by hand, 30 000 each', { tpm: TPM / 2 }],
  ])('%s: the pair never sends more than the project admits', async (how, model) => {
    s = await setup(model);
    const r = await run(s, 20);
    process.stdout.write(
      `OpenAI project, two keys, ${how}, 166 % for 20 s: ${r.rejected} upstream 429s of ` +
        `${r.sent} sent, ${r.failed} failed\n`,
    );
    expect(r.rejected).toBe(0);
    expect(r.failed).toBe(0);
    // The headers speak of the project (60 000): a limit split by hand stays split.
    for (const state of s.states) expect(state.quota.limits.tpm.value).toBe(model.tpm);
  });

  it('each key at the project limit and counted alone meets the project 429s', async () => {
    s = await setup({ tpm: TPM });
    const r = await run(s, 20);
    process.stdout.write(
      `OpenAI project, two keys counted alone, 166 % for 20 s: ${r.rejected} upstream 429s of ` +
        `${r.sent} sent, ${r.failed} failed\n`,
    );
    expect(r.rejected).toBeGreaterThan(0);
  });
});

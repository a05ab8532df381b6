import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { allAnswered, upstreamCounts } from '../support/answered';
import { FakeClock } from '../support/random';
import { GPT } from '../support/upstream';

/** Virtual time moves in steps of this many ms. */
const STEP = 50;
/** Each project's tokens per minute, and the organization's above both. */
const PROJECT_TPM = 40_000;
const ORG_TPM = 60_000;
/** 6 000 characters: 1 500 prompt tokens (+16 of cap), to empty the buckets at the start. */
const BIG = 'x'.repeat(6_000);
/** 600 characters: 150 prompt tokens (+16 of cap), 166 tokens a call. */
const SMALL = 'x'.repeat(600);
/** Two keys of project p1 and one of project p2, in one organization; a call's tag names its project. */
const KEYS = [
  { key: 'a1', pool: 'org/p1', project: 'p1' },
  { key: 'a2', pool: 'org/p1', project: 'p1' },
  { key: 'b1', pool: 'org/p2', project: 'p2' },
] as const;

/**
 * OpenAI's limits as its guide sets them: per organization, and per project below it (a
 * project's limit is its own, the organization's holds every project's calls); the simulated
 * upstream keeps one bucket per project and one for the organization. The switchboard names the
 * same paths; `org` says whether it is told the organization's limit.
 */
async function setup(org: boolean) {
  const clock = new FakeClock();
  const upstream = await SimulatedUpstream.start({
    clock: clock.now,
    quotaPools: { org: { tpm: ORG_TPM } },
    deployments: KEYS.map(({ key, pool }) => ({
      name: key,
      rules: 'openai' as const,
      rpm: 10_000,
      tpm: PROJECT_TPM,
      quotaPool: pool,
    })),
  });
  const sb: Switchboard = createSwitchboard({
    clock: clock.now,
    ratelimitWindow: 60_000,
    queue: { maxWait: 3_600_000 },
    quotaPools: org ? { org: { tpm: ORG_TPM } } : undefined,
    deployments: KEYS.map(({ key, pool, project }) => ({
      provider: 'openai' as const,
      name: key,
      baseURL: upstream.deployment(key).openaiBaseURL,
      apiKey: `sk-${key}`,
      tags: [project],
      models: [{ name: GPT, rpm: 10_000, tpm: PROJECT_TPM, quotaPool: pool }],
    })),
  });
  const states = KEYS.map(({ key }) => sb.deployments.get(key)!.models.get(GPT)!);
  const sims = KEYS.map(({ key }) => upstream.deployment(key));
  return { clock, upstream, sb, states, sims };
}

type Setup = Awaited<ReturnType<typeof setup>>;

const settle = (s: Setup): Promise<void> => allAnswered(s.states);

/**
 * Sends each project `burst` big calls at once (1 516 tokens each), then p1 one small call every
 * `p1` steps and p2 one every `p2` steps (0: none) for `seconds`, and moves time until every call is answered: per project the calls done and the tokens the
 * upstream counted, and the upstream's 429s.
 */
async function run(s: Setup, seconds: number, every: { p1: number; p2: number; burst: number }) {
  const calls: Promise<unknown>[] = [];
  const done = { p1: 0, p2: 0 };
  let failed = 0;
  const send = (project: 'p1' | 'p2', i: number, prompt = SMALL): void => {
    const call = s.sb.chat.completions.create({
      model: GPT,
      max_tokens: 16,
      messages: [{ role: 'user', content: `${i} ${prompt}`.slice(0, prompt.length) }],
      tags: [project],
    });
    calls.push(call.then(() => (done[project] += 1)).catch(() => (failed += 1)));
  };
  for (let i = 0; i < every.burst; i++) {
    if (every.p1 > 0) send('p1', -i, BIG);
    if (every.p2 > 0) send('p2', -i, BIG);
  }
  const start = s.clock.ms;
  for (let step = 0; ; step++) {
    s.clock.advance(STEP);
    if (s.clock.ms - start <= seconds * 1_000) {
      if (every.p1 > 0 && step % every.p1 === 0) send('p1', step);
      if (every.p2 > 0 && step % every.p2 === 0) send('p2', step);
    }
    s.sb.queue!.kick(GPT);
    await settle(s);
    if (s.clock.ms - start > seconds * 1_000 && s.sb.queue!.length(GPT) === 0) break;
  }
  await Promise.all(calls);
  const { sent, rejected } = upstreamCounts(s.sims);
  return { sent, rejected, failed, done, calls: calls.length, ms: s.clock.ms - start };
}

describe('quota pool paths: an organization above two projects', () => {
  jest.setTimeout(60_000);
  let s: Setup | undefined;
  afterEach(async () => {
    await s?.sb.close();
    await s?.upstream.close();
    s = undefined;
  });

  it("the project level binds: p1's two keys at 166 % of their project never exceed it", async () => {
    s = await setup(true);
    // 26 big calls (39 416 tokens) nearly empty the project; then one call every 150 ms: 400
    // calls a minute of 166 tokens, 66 400 TPM on a 40 000 project.
    const r = await run(s, 30, { p1: 3, p2: 0, burst: 26 });
    process.stdout.write(
      `org/p1 alone at 166 % for 30 s: ${r.rejected} upstream 429s of ${r.sent} sent, ` +
        `${r.done.p1} done, ${r.failed} failed, over ${r.ms / 1000} s\n`,
    );
    expect(r.rejected).toBe(0);
    expect(r.failed).toBe(0);
    // The project's 40 000 a minute paced them: queued, not refused, done later than the 30 s
    // they arrived in (what they asked, 72 616 tokens, less the bucket's 40 000, at 40 000 a
    // minute: 49 s).
    expect(r.done.p1).toBe(r.calls);
    expect(r.ms).toBeGreaterThan(45_000);
  });

  it.each([
    ['told the organization level', true],
    ['told only the projects', false],
  ])(
    'the organization level binds: both projects at 100 %, 133 % of the organization (%s)',
    async (how, org) => {
      s = await setup(org);
      // 20 big calls each (60 640 tokens) empty the organization, not either project; then one
      // call every 250 ms per project: 39 840 TPM each, 79 680 on a 60 000 organization.
      const r = await run(s, 30, { p1: 5, p2: 5, burst: 20 });
      process.stdout.write(
        `org above p1 and p2, each at 100 % for 30 s, ${how}: ${r.rejected} upstream 429s of ` +
          `${r.sent} sent; done p1 ${r.done.p1}, p2 ${r.done.p2}; ${r.failed} failed\n`,
      );
      if (org) {
        expect(r.rejected).toBe(0);
        expect(r.failed).toBe(0);
        // Both projects are served while the organization holds them back.
        expect(r.done.p1).toBeGreaterThan(r.calls / 4);
        expect(r.done.p2).toBeGreaterThan(r.calls / 4);
      } else {
        // Each project's own count has room: the organization's limit is what refuses them.
        expect(r.rejected).toBeGreaterThan(0);
      }
    },
  );
});

describe('quotaPools: the levels a configuration names', () => {
  const model = (quotaPool: string) => [{ name: GPT, tpm: 1_000, quotaPool }];
  const build = (quotaPools: Record<string, object>, pools = ['org/p1']) =>
    createSwitchboard({
      quotaPools,
      deployments: pools.map((pool, i) => ({
        provider: i < 2 ? ('openai' as const) : ('anthropic' as const),
        name: `d${i}`,
        baseURL: `http://127.0.0.1:8${i}00/v1`,
        apiKey: 'k',
        models: model(pool),
      })),
    });

  it.each([
    [{ orgx: { tpm: 1 } }, undefined, /quotaPools\.orgx.*is the level of no model's quotaPool/],
    [{ org: {} }, undefined, /quotaPools\.org.*sets no limit/],
    [{ 'org//p1': { tpm: 1 } }, undefined, /is not a quota pool path/],
    [{ org: { tpm: -1 } }, undefined, /quotaPools\.org\.tpm must be a non-negative integer/],
    [{}, ['org//p1'], /quotaPool.*has an empty or blank-edged level/],
    [{ org: { tpm: 1 } }, ['org/p1', 'org/p2', 'org/p3'], /a level belongs to one provider/],
  ])('%j over %j is refused, naming the key', (levels, pools, message) => {
    expect(() => build(levels, pools)).toThrow(message);
  });

  it('a sound one is taken: a charge on one project takes room from the other', async () => {
    const sb = build({ org: { tpm: 1_500 } }, ['org/p1', 'org/p2']);
    const [p1, p2] = ['d0', 'd1'].map((d) => sb.deployments.get(d)!.models.get(GPT)!);
    expect(p2!.hasRoom({ input: 700, output: 0 })).toBe(true);
    p1!.admit({ input: 900, output: 0 });
    // p2's own 1 000 is untouched; the organization has 600 left.
    expect(p2!.hasRoom({ input: 700, output: 0 })).toBe(false);
    expect(p2!.hasRoom({ input: 500, output: 0 })).toBe(true);
    await sb.close();
  });
});

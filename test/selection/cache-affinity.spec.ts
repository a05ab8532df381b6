import { createSwitchboard, type Switchboard, type SwitchboardOptions } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { FakeClock, seeded } from '../support/random';
import '../support/quiet-logs';

const MODEL = 'gpt-4o';
const NAMES = ['a', 'b', 'c'] as const;
/** About 1 250 tokens of a shared system prompt: long enough to be cached upstream. */
const handbook = (n = 0) =>
  `Handbook edition ${n}. You answer questions about the staff handbook. `.repeat(80);

describe('prompt-cache affinity', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard;
  let clock: FakeClock;

  const start = async (options: Partial<SwitchboardOptions> = {}, tpm = 100_000) => {
    clock = new FakeClock();
    upstream = await SimulatedUpstream.start({
      deployments: NAMES.map((name) => ({ name, tpm })),
      clock: clock.now,
    });
    sb = createSwitchboard({
      deployments: NAMES.map((name) => ({
        provider: 'openai' as const,
        name,
        baseURL: upstream.deployment(name).openaiBaseURL,
        apiKey: 'k',
        models: [{ name: MODEL, tpm }],
      })),
      clock: clock.now,
      random: seeded(11),
      ...options,
    });
  };
  afterEach(async () => {
    await sb.close();
    await upstream.close();
  });

  const ask = (system: string, i: number) =>
    sb.chat.completions.create({
      model: MODEL,
      max_tokens: 16,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: `Question ${i}: what does section ${i} say?` },
      ],
    });
  const sent = () => NAMES.map((name) => upstream.deployment(name).stats.requests);
  const upstream429s = () =>
    NAMES.reduce((n, name) => n + (upstream.deployment(name).stats.byStatus[429] ?? 0), 0);

  it('keeps calls sharing a long system prompt on one deployment, where they hit its cache', async () => {
    await start();
    let hits = 0;
    for (let i = 0; i < 20; i++) {
      const answer = await ask(handbook(), i);
      if (answer.usage!.prompt_tokens_details!.cached_tokens! > 0) hits++;
    }
    expect(Math.max(...sent())).toBeGreaterThanOrEqual(17);
    expect(hits).toBeGreaterThanOrEqual(17);
  });

  it('spreads calls with different system prompts', async () => {
    await start();
    for (let i = 0; i < 20; i++) await ask(handbook(i), i);
    expect(Math.max(...sent())).toBeLessThanOrEqual(12);
    expect(Math.min(...sent())).toBeGreaterThan(0);
  });

  it('spreads the shared prompt too with cacheAffinity: false', async () => {
    await start({ cacheAffinity: false });
    let hits = 0;
    for (let i = 0; i < 20; i++) {
      const answer = await ask(handbook(), i);
      if (answer.usage!.prompt_tokens_details!.cached_tokens! > 0) hits++;
    }
    expect(Math.max(...sent())).toBeLessThanOrEqual(12);
    // Each deployment warms its own cache: its first call misses.
    expect(hits).toBe(20 - sent().filter((n) => n > 0).length);
  });

  it('moves the prefix when its home is full, without a single upstream 429, and stays at the new home', async () => {
    // Each call is charged about 1 450 tokens at admission: a deployment takes six a minute.
    await start({}, 9_000);
    const homes: string[] = [];
    for (let i = 0; i < 14; i++) {
      const answer = await ask(handbook(), i);
      homes.push(answer.id.split('-')[1]!);
    }
    expect(upstream429s()).toBe(0);
    // Runs of calls on one deployment, each as long as that deployment's room.
    const runs = homes.reduce<string[]>((r, h) => (r.at(-1) === h ? r : [...r, h]), []);
    expect(runs.length).toBe(3);
    expect(new Set(runs).size).toBe(3);
    expect(homes.filter((h) => h === runs[0]).length).toBe(6);
  });

  it('follows prompt_cache_key, whatever the prompt', async () => {
    await start();
    for (let i = 0; i < 12; i++) {
      await sb.chat.completions.create({
        model: MODEL,
        prompt_cache_key: 'tenant-7',
        messages: [{ role: 'user', content: `short ${i}` }],
      });
    }
    expect(Math.max(...sent())).toBe(12);
  });
});

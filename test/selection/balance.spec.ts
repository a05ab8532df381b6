import { ask, GPT, requestCounts, rig, type Rig } from '../support/upstream';
import { seeded } from '../support/random';

const stateOf = (r: Rig, name: string) => r.sb.deployments.get(name)!.models.get(GPT)!;

describe('balancing over three deployments', () => {
  let r: Rig;
  beforeEach(async () => {
    // Uncapped calls charged no reservation: 100 of them fit the three deployments' quota.
    r = await rig({
      openai: 3,
      quota: { tpm: 30_000, rpm: 300, outputReservation: 0 },
      random: seeded(11),
    });
  });
  afterEach(() => r.close());

  it('answers every call as deployments go down one by one, best effort when none is healthy', async () => {
    const names = ['oai0', 'oai1', 'oai2'];
    for (let down = 0; down <= 3; down++) {
      names.slice(0, down).forEach((n) => stateOf(r, n).markDown(60_000));
      const replies = await Promise.all(
        Array.from({ length: 12 }, (_, i) => r.sb.chat.completions.create(ask(`down${down}-${i}`))),
      );
      replies.forEach((c, i) =>
        expect(c.choices[0]!.message.content).toContain(`down${down}-${i}`),
      );
    }
    stateOf(r, 'oai1').markUp();
    r.upstream.deployments.forEach((d) => d.resetStats());
    await Promise.all(Array.from({ length: 10 }, () => r.sb.chat.completions.create(ask('up'))));
    expect(requestCounts(r.upstream)).toEqual({ oai0: 0, oai1: 10, oai2: 0 });
  });

  it('uses more than one deployment', async () => {
    await Promise.all(Array.from({ length: 30 }, () => r.sb.chat.completions.create(ask('x'))));
    const used = Object.values(requestCounts(r.upstream)).filter((n) => n > 0);
    expect(used.length).toBe(3);
  });

  it('spreads 100 concurrent calls evenly: 25-40 each', async () => {
    await Promise.all(
      Array.from({ length: 100 }, (_, i) => r.sb.chat.completions.create(ask(`${i}`))),
    );
    for (const n of Object.values(requestCounts(r.upstream))) {
      expect(n).toBeGreaterThanOrEqual(25);
      expect(n).toBeLessThanOrEqual(40);
    }
  });

  it('sends nothing to a marked-down deployment and 40-60 to each of the others', async () => {
    stateOf(r, 'oai0').markDown(60_000);
    await Promise.all(
      Array.from({ length: 100 }, (_, i) => r.sb.chat.completions.create(ask(`${i}`))),
    );
    const counts = requestCounts(r.upstream);
    expect(counts.oai0).toBe(0);
    for (const name of ['oai1', 'oai2']) {
      expect(counts[name]).toBeGreaterThanOrEqual(40);
      expect(counts[name]).toBeLessThanOrEqual(60);
    }
  });

  it('evens the usage out again after one deployment is reset', async () => {
    await Promise.all(
      Array.from({ length: 100 }, (_, i) => r.sb.chat.completions.create(ask(`${i}`))),
    );
    stateOf(r, 'oai0').resetUsage();
    await Promise.all(
      Array.from({ length: 100 }, (_, i) => r.sb.chat.completions.create(ask(`${i}`))),
    );
    const usage = ['oai0', 'oai1', 'oai2'].map((n) => stateOf(r, n).rpmUsage);
    const even = usage.reduce((a, b) => a + b) / 3;
    for (const u of usage) expect(Math.abs(u - even)).toBeLessThanOrEqual(even * 0.15);
  });

  it('keeps 5 sessions x 20 calls each on one deployment', async () => {
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        r.sb.chat.completions.create(ask(`session-${i % 5}`, { session_id: `session-${i % 5}` })),
      ),
    );
    for (const n of Object.values(requestCounts(r.upstream))) expect(n % 20).toBe(0);
    const homes = new Map<string, Set<string>>();
    for (const d of r.upstream.deployments) {
      for (const q of d.requests) {
        const text = (q.body as { messages: { content: string }[] }).messages[0]!.content;
        homes.set(text, (homes.get(text) ?? new Set()).add(d.name));
      }
    }
    expect(homes.size).toBe(5);
    for (const served of homes.values()) expect(served.size).toBe(1);
  });
});

describe('sessions through calls', () => {
  let r: Rig;
  beforeEach(async () => {
    r = await rig({ openai: 3 });
  });
  afterEach(() => r.close());

  it('sticks, moves when its deployment is marked down, and sticks to the new one', async () => {
    r.upstream.deployments.forEach((d) => d.resetStats());
    for (let i = 0; i < 5; i++)
      await r.sb.chat.completions.create(ask('turn', { session_id: 'chat-1' }));
    const first = Object.entries(requestCounts(r.upstream)).find(([, n]) => n === 5)![0];
    stateOf(r, first).markDown(60_000);
    r.upstream.deployments.forEach((d) => d.resetStats());
    for (let i = 0; i < 5; i++)
      await r.sb.chat.completions.create(ask('turn', { session_id: 'chat-1' }));
    const counts = requestCounts(r.upstream);
    expect(counts[first]).toBe(0);
    expect(Object.values(counts).filter((n) => n === 5)).toHaveLength(1);
    expect(r.sb.selectDeployment({ model: GPT, sessionId: 'chat-1' }).name).not.toBe(first);
  });
});

describe('best effort within one call', () => {
  let r: Rig;
  beforeEach(async () => {
    r = await rig({ openai: 2, random: seeded(3) });
  });
  afterEach(() => r.close());

  it('with the first deployment failing and the other marked down, fails over to the untried one', async () => {
    r.upstream.deployment('oai0').fail({ kind: 'status', status: 500 }, Infinity);
    stateOf(r, 'oai1').markDown(60_000);
    // Two calls: a third 500 in a row would mark oai0 down as well.
    for (let i = 0; i < 2; i++) {
      const c = await r.sb.chat.completions.create(ask(`call ${i}`));
      expect(c.choices[0]!.message.content).toContain(`call ${i}`);
    }
    // Each call: the healthy oai0 failed first, then the cooling but untried oai1 answered.
    expect(requestCounts(r.upstream)).toEqual({ oai0: 2, oai1: 2 });
  });

  it('goes back to a tried deployment only once every one was tried', () => {
    const [a, b] = [...r.sb.deployments.values()];
    stateOf(r, 'oai1').markDown(60_000);
    for (let i = 0; i < 20; i++) {
      expect(r.sb.picker.select(GPT, undefined, new Set([a!]))).toBe(b);
      expect(r.sb.picker.select(GPT, undefined, new Set([a!, b!]))).toBe(a);
    }
  });
});

import {
  createSwitchboard,
  TwoRandomChoices,
  type DeploymentConfig,
  type Switchboard,
} from 'nestjs-switchboard';
import { DEFAULT_LATENCY_DECAY, LatencyTracker } from '../../src/registry/latency';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { openaiDeployments } from '../support/configs';
import { FakeClock, seeded } from '../support/random';

const GPT = 'gpt-4o-mini';
const DECAY = DEFAULT_LATENCY_DECAY;

describe('LatencyTracker (peak EWMA on an injected clock)', () => {
  const clock = new FakeClock();
  const answer = (t: LatencyTracker, ms: number, tokens?: number) => {
    const sent = clock.now();
    clock.advance(ms);
    t.answered(sent, tokens);
  };

  it('knows nothing before the first answer', () => {
    const t = new LatencyTracker(clock.now);
    expect(t.firstTokenMs).toBeUndefined();
    expect(t.perTokenMs).toBeUndefined();
    expect(t.snapshot()).toEqual({});
    expect(t.against(new LatencyTracker(clock.now))).toBeUndefined();
  });

  it('normalises answers for length: time per output token, and time to the first event of streams', () => {
    const t = new LatencyTracker(clock.now);
    answer(t, 2_000, 100);
    expect(t.perTokenMs).toBe(20);
    const sent = clock.now();
    clock.advance(350);
    t.firstEvent(sent);
    expect(t.firstTokenMs).toBe(350);
    // No tokens reported: the whole time counts as one.
    const u = new LatencyTracker(clock.now);
    answer(u, 80, undefined);
    expect(u.perTokenMs).toBe(80);
    answer(u, 80, 0);
    expect(u.snapshot()).toEqual({ perTokenMs: 80 });
  });

  it('takes a slower answer at once (peak) and a faster one by the weight its interval gives', () => {
    const t = new LatencyTracker(clock.now);
    answer(t, 100, 1);
    answer(t, 500, 1);
    expect(t.perTokenMs).toBe(500);
    // A fast answer DECAY ms after the last sample: the estimate, faded to 500 / e, moves
    // 1 - 1/e of the way to it.
    clock.advance(DECAY - 10);
    answer(t, 10, 1);
    const faded = 500 / Math.E;
    expect(t.perTokenMs).toBeCloseTo(faded + (10 - faded) * (1 - 1 / Math.E), 6);
    // Answers in quick succession barely move it; a slower one than the estimate takes over.
    const before = t.perTokenMs!;
    answer(t, 1, 1);
    expect(t.perTokenMs).toBeLessThan(before);
    expect(t.perTokenMs).toBeGreaterThan(before * 0.99);
    answer(t, 300, 1);
    expect(t.perTokenMs).toBe(300);
  });

  it('fades while no answer renews it, by a factor e per decay time', () => {
    const t = new LatencyTracker(clock.now);
    answer(t, 400, 1);
    clock.advance(DECAY);
    expect(t.perTokenMs).toBeCloseTo(400 / Math.E, 6);
    clock.advance(2 * DECAY);
    expect(t.perTokenMs).toBeCloseTo(400 / Math.E ** 3, 6);
  });

  it('compares like with like: time to first token when both have it, else per token', () => {
    const a = new LatencyTracker(clock.now);
    const b = new LatencyTracker(clock.now);
    answer(a, 50, 10);
    expect(a.against(b)).toBeUndefined();
    answer(b, 100, 10);
    expect(a.against(b)).toEqual([expect.closeTo(5, 1), 10]);
    const sent = clock.now();
    clock.advance(300);
    a.firstEvent(sent);
    // Only one has streamed: still per token.
    expect(a.against(b)![1]).toBeCloseTo(10 * Math.exp(-300 / DECAY), 6);
    b.firstEvent(sent);
    expect(a.against(b)).toEqual([300, 300]);
  });
});

describe('TwoRandomChoices({ latency: true })', () => {
  const clock = new FakeClock();
  let sb: Switchboard | undefined;
  afterEach(async () => {
    await sb?.close();
    sb = undefined;
  });

  const board = (latency: boolean) => {
    sb = createSwitchboard({
      deployments: openaiDeployments(2),
      selector: new TwoRandomChoices({ latency, random: seeded(3) }),
      clock: clock.now,
      ratelimitWindow: 0,
    });
    const [a, b] = [...sb.deployments.values()].map((d) => d.models.get(GPT)!);
    return { sb, a: a!, b: b! };
  };
  const answered = (state: { latency: LatencyTracker }, ms: number) =>
    state.latency.answered(clock.now() - ms, 1);
  const picks = (s: Switchboard, n: number) => {
    const counts: Record<string, number> = {};
    for (let i = 0; i < n; i++) {
      const name = s.selectDeployment({ model: GPT }).name;
      counts[name] = (counts[name] ?? 0) + 1;
    }
    return counts;
  };

  it('avoids the slower of two equally utilized deployments, which utilization alone does not', () => {
    const { sb: s, a, b } = board(true);
    answered(a, 400);
    answered(b, 20);
    expect(picks(s, 40)).toEqual({ d1: 40 });
    const plain = board(false);
    answered(plain.a, 400);
    answered(plain.b, 20);
    expect(picks(plain.sb, 40).d0).toBeGreaterThan(10);
  });

  it('weighs calls in flight: a fast deployment busy enough loses to a slower idle one', () => {
    const { sb: s, a, b } = board(true);
    answered(a, 100);
    answered(b, 20);
    for (let i = 0; i < 4; i++) b.inFlight.start();
    // 20 x 5 = 100 x 1: the first drawn wins ties; one more call in flight tips it.
    b.inFlight.start();
    expect(picks(s, 20)).toEqual({ d0: 20 });
  });

  it('still weighs utilization: a fast deployment near its quota loses', () => {
    const { sb: s, a, b } = board(true);
    answered(a, 30);
    answered(b, 20);
    b.spend(0, 285); // 95 % of 300 rpm
    expect(picks(s, 20)).toEqual({ d0: 20 });
  });

  it('tries a slow deployment again once its estimate has faded, and keeps it if it recovered', () => {
    const { sb: s, a, b } = board(true);
    answered(a, 400);
    answered(b, 20);
    let probedAfter = -1;
    for (let second = 1; second <= 60 && probedAfter < 0; second++) {
      clock.advance(1_000);
      answered(b, 20); // the fast one keeps answering
      if (s.selectDeployment({ model: GPT }).name === 'd0') probedAfter = second;
    }
    // 400 / e^(t / 10 s) < 20 after about 30 s.
    expect(probedAfter).toBeGreaterThan(25);
    expect(probedAfter).toBeLessThanOrEqual(35);
    // The probe was fast: it is taken again.
    answered(a, 10);
    expect(picks(s, 10).d0).toBeGreaterThan(0);
    // Had it still been slow, it would be avoided at once.
    answered(a, 400);
    expect(picks(s, 10)).toEqual({ d1: 10 });
  });
});

describe('latency-aware selection against simulated deployments', () => {
  let upstream: SimulatedUpstream | undefined;
  let sb: Switchboard | undefined;
  afterEach(async () => {
    await sb?.close();
    await upstream?.close();
    sb = upstream = undefined;
  });

  /** Deployments fast0, fast1 and slow (400 ms slower); `cap` = maxInFlight of each. */
  const start = async (cap?: number, clock?: () => number) => {
    upstream = await SimulatedUpstream.start({
      deployments: [
        { name: 'fast0', latency: 5 },
        { name: 'fast1', latency: 5 },
        { name: 'slow', latency: 405 },
      ],
    });
    const deployments: DeploymentConfig[] = upstream.deployments.map((d) => ({
      provider: 'openai',
      name: d.name,
      baseURL: d.openaiBaseURL,
      apiKey: 'k',
      maxInFlight: cap,
      models: [{ name: GPT }],
    }));
    sb = createSwitchboard({
      deployments,
      selector: new TwoRandomChoices({ latency: true, random: seeded(27) }),
      ratelimitWindow: 0,
      clock,
    });
    return sb;
  };
  const ask = (content: string) => ({ model: GPT, messages: [{ role: 'user' as const, content }] });

  it('with one deployment 400 ms slower, sends it at most 15 % of the calls', async () => {
    const s = await start();
    // Four callers, one call after another each (utilization alone sends the slow one about a
    // quarter of them, seeded).
    await Promise.all(
      [0, 1, 2, 3].map(async (w) => {
        for (let i = 0; i < 15; i++) await s.chat.completions.create(ask(`${w}-${i}`));
      }),
    );
    const slow = upstream!.deployment('slow').stats.requests;
    expect(slow).toBeLessThanOrEqual(Math.floor(60 * 0.15));
    expect(s.stats().slow![GPT]!.latency!.perTokenMs).toBeGreaterThan(
      s.stats().fast0![GPT]!.latency!.perTokenMs!,
    );
  });

  it('when the fast ones are full, the slow one takes the overflow', async () => {
    const s = await start(1);
    const replies = await Promise.all(
      [0, 1, 2].map((i) => s.chat.completions.create(ask(`overflow ${i}`))),
    );
    expect(replies).toHaveLength(3);
    expect(upstream!.deployments.map((d) => d.stats.requests)).toEqual([1, 1, 1]);
  });

  it("measures a stream's time to first token on the switchboard's clock", async () => {
    const clock = new FakeClock();
    const s = await start(undefined, clock.now);
    const slow = upstream!.deployment('slow');
    // Only the slow one serves: the others are marked down.
    for (const name of ['fast0', 'fast1']) s.deployments.get(name)!.models.get(GPT)!.markDown();
    const arrived = slow.waitFor((d) => d.stats.requests === 1).then(() => clock.advance(400));
    const stream = await s.chat.completions.create({ ...ask('ttft'), stream: true });
    await arrived;
    for await (const _ of stream) void _;
    expect(s.stats().slow![GPT]!.latency).toEqual({ firstTokenMs: 400 });
  });
});

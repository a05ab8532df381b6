import OpenAI from 'openai';
import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import { isNoRoom } from '../../src/quota/no-room';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { FakeClock } from '../support/random';
import { ask, GPT } from '../support/upstream';

/** Faithful Azure deployments and a switchboard on one hand-driven clock. */
async function setup(names: string[]) {
  const clock = new FakeClock();
  const upstream = await SimulatedUpstream.start({
    clock: clock.now,
    deployments: names.map((name) => ({ name, tpm: 10_000, rpm: 6_000 })),
  });
  const sb: Switchboard = createSwitchboard({
    clock: clock.now,
    ratelimitWindow: 60_000,
    deployments: names.map((name) => ({
      provider: 'openai' as const,
      name,
      baseURL: upstream.deployment(name).openaiBaseURL,
      apiKey: `sk-${name}`,
      models: [{ name: GPT, tpm: 10_000, rpm: 6_000 }],
    })),
  });
  const rejected = () =>
    names.reduce((n, name) => n + (upstream.deployment(name).stats.byStatus[429] ?? 0), 0);
  return {
    clock,
    upstream,
    sb,
    rejected,
    close: async () => {
      await sb.close();
      await upstream.close();
    },
  };
}

describe("anchoring on Azure's fixed windows, over the real SDK", () => {
  let s: Awaited<ReturnType<typeof setup>>;
  afterEach(() => s.close());

  it("routes into the upstream's next window as it begins, and never into a full one", async () => {
    s = await setup(['oai0']);
    await s.sb.chat.completions.create(ask('x', { max_tokens: 5_000 }));
    s.clock.advance(30_000);
    await s.sb.chat.completions.create(ask('x', { max_tokens: 4_000 }));
    // 9002 of 10 000 counted: a call reserving 2000 is held back, nothing sent.
    const held = await s.sb.chat.completions
      .create(ask('x', { max_tokens: 2_000 }))
      .catch((e: unknown) => e);
    expect(isNoRoom(held)).toBe(true);
    expect(s.upstream.deployment('oai0').stats.requests).toBe(2);
    // The upstream's window, opened by the first call, ends: it forgets both calls. Our minute
    // still holds the second one, but the reset header said when the upstream would forget it.
    s.clock.advance(30_000);
    await expect(
      s.sb.chat.completions.create(ask('x', { max_tokens: 9_000 })),
    ).resolves.toBeDefined();
    expect(s.rejected()).toBe(0);
  });

  it("leaves another application's deployment to it while others have room, and admits by its count now", async () => {
    s = await setup(['oai0', 'oai1']);
    const other = new OpenAI({
      baseURL: s.upstream.deployment('oai0').openaiBaseURL,
      apiKey: 'other',
      maxRetries: 0,
    });
    // The other application opens oai0's window and uses 3000 of it in its first 15 s.
    await other.chat.completions.create(ask('y'.repeat(4), { max_tokens: 2_999 }));
    s.clock.advance(15_000);
    const oai0 = s.sb.deployments.get('oai0')!.models.get(GPT)!;
    const oai1 = s.sb.deployments.get('oai1')!;
    // A first call goes to oai0 (oai1 is down by hand for it), and its answer tells.
    oai1.models.get(GPT)!.markDown(1);
    await s.sb.chat.completions.create(ask('x', { max_tokens: 99 }));
    s.clock.advance(1);
    expect(oai0.quota.anchoredUsage().tpm).toBeCloseTo(3_100, -1);
    // Routing reckons that the other application goes on at its pace (12 000 a minute, more than
    // the window has left): oai0 looks full, while admission still finds room there.
    expect(oai0.util).toBeGreaterThan(0.99);
    expect(oai0.hasRoom({ input: 1, output: 6_000 })).toBe(true);
    for (let i = 0; i < 4; i++) await s.sb.chat.completions.create(ask('x', { max_tokens: 99 }));
    expect(s.upstream.deployment('oai1').stats.requests).toBe(4);
    expect(s.upstream.deployment('oai0').stats.requests).toBe(2);
    expect(s.rejected()).toBe(0);
  });
});

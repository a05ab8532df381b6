import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { SwitchboardError } from 'nestjs-switchboard';
import { FakeClock } from '../support/random';
import { ask, askClaude, CLAUDE, GPT, requestCounts, rig, type Rig } from '../support/upstream';

const stateOf = (r: Rig, name: string, model = GPT) =>
  r.sb.deployments.get(name)!.models.get(model)!;
const total = (r: Rig) => Object.values(requestCounts(r.upstream)).reduce((a, b) => a + b, 0);

/** One deployment counting as Azure does, TPM 10 000 (RPM out of the way). */
const AZURE_10K = {
  openai: 1,
  quota: { tpm: 10_000, rpm: 1000 },
  simulated: { tpm: 10_000, rpm: 6000, chargeMaxTokens: true },
};

/** Another application's own client on oai0, unseen by the switchboard. */
const otherApplication = (r: Rig) =>
  new OpenAI({
    baseURL: r.upstream.deployment('oai0').openaiBaseURL,
    apiKey: 'other',
    maxRetries: 0,
  });

describe('a call that can never fit', () => {
  let r: Rig;
  afterEach(() => r.close());

  it('fails at once naming the sizes, sends nothing and cools nothing', async () => {
    r = await rig({ quota: { tpm: 1000, rpm: 100 } });
    const call = r.sb.chat.completions.create(ask('x'.repeat(4000), { max_tokens: 200 }));
    await expect(call).rejects.toBeInstanceOf(SwitchboardError);
    await expect(call).rejects.toThrow(/1200 tokens.*largest tpm of its deployments, 1000/);
    await expect(call).rejects.not.toThrow(/retry/i);
    expect(total(r)).toBe(0);
    for (const d of r.sb.deployments.values()) expect(d.models.get(GPT)!.isCooling()).toBe(false);
  });
});

describe('no room by the upstream count', () => {
  let r: Rig;
  afterEach(() => r.close());

  it("fails fast with the SDK's RateLimitError, retry-after set, and sends nothing", async () => {
    r = await rig({ openai: 2, quota: { tpm: 1000, rpm: 100 } });
    for (const d of r.sb.deployments.values()) d.models.get(GPT)!.admit({ input: 900, output: 0 });
    const error = await r.sb.chat.completions
      .create(ask('x'.repeat(400), { max_tokens: 50 }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    const e = error as InstanceType<typeof OpenAI.RateLimitError>;
    expect(e.status).toBe(429);
    expect(e.message).toMatch(/gpt-4o-mini/);
    expect(e.message).toMatch(/room expected in \d+ ms/);
    expect(Number(e.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(total(r)).toBe(0);
  });

  it('answers Claude callers with the Anthropic SDK error class', async () => {
    r = await rig({ openai: 0, anthropic: 1, quota: { tpm: 0, rpm: 0 } });
    stateOf(r, 'claude0', CLAUDE).markDown(60_000, 'rate_limit');
    await expect(r.sb.messages.create(askClaude('hi'))).rejects.toBeInstanceOf(
      Anthropic.RateLimitError,
    );
    expect(total(r)).toBe(0);
  });

  it('still tries, best effort, when every deployment was marked down by hand', async () => {
    r = await rig({ openai: 2 });
    for (const d of r.sb.deployments.values()) d.models.get(GPT)!.markDown(60_000);
    await expect(r.sb.chat.completions.create(ask('hi'))).resolves.toBeDefined();
    expect(total(r)).toBe(1);
  });
});

describe('queue', () => {
  let r: Rig;
  afterEach(() => r.close());

  it('waits first come, first served and goes when room comes back', async () => {
    r = await rig({ openai: 2, queue: { maxWait: 60_000 } });
    for (const d of r.sb.deployments.values()) d.models.get(GPT)!.markDown(60_000, 'rate_limit');
    const order: string[] = [];
    const a = r.sb.chat.completions.create(ask('a')).then(() => order.push('a'));
    const b = r.sb.chat.completions.create(ask('b')).then(() => order.push('b'));
    // Calls join the queue synchronously, before the first await.
    expect(r.sb.queue!.length(GPT)).toBe(2);
    expect(total(r)).toBe(0);
    stateOf(r, 'oai1').markUp();
    await Promise.all([a, b]);
    expect(order).toEqual(['a', 'b']);
    expect(requestCounts(r.upstream)).toEqual({ oai0: 0, oai1: 2 });
    expect(r.sb.queue!.length(GPT)).toBe(0);
  });

  it('fails past maxWait with the RateLimitError, and turns away calls beyond maxQueued', async () => {
    r = await rig({ openai: 1, queue: { maxWait: 50, maxQueued: 1 } });
    stateOf(r, 'oai0').markDown(60_000, 'rate_limit');
    const first = r.sb.chat.completions.create(ask('a')).catch((e: unknown) => e);
    // Calls join the queue synchronously, before the first await.
    expect(r.sb.queue!.length(GPT)).toBe(1);
    await expect(r.sb.chat.completions.create(ask('b'))).rejects.toBeInstanceOf(
      OpenAI.RateLimitError,
    );
    const error = await first;
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as Error).message).toMatch(/after waiting \d+ ms/);
    expect(total(r)).toBe(0);
  });

  it("honours the caller's signal while waiting", async () => {
    r = await rig({ openai: 1, queue: { maxWait: 60_000 } });
    stateOf(r, 'oai0').markDown(60_000, 'rate_limit');
    const controller = new AbortController();
    const call = r.sb.chat.completions.create(ask('a'), { signal: controller.signal });
    // Calls join the queue synchronously, before the first await.
    expect(r.sb.queue!.length(GPT)).toBe(1);
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
    expect(r.sb.queue!.length(GPT)).toBe(0);
  });
});

describe('anchoring over the real SDKs', () => {
  let r: Rig;
  afterEach(() => r.close());

  it("sees another application's usage in the upstream's headers", async () => {
    r = await rig(AZURE_10K);
    await otherApplication(r).chat.completions.create(
      ask('y'.repeat(16_000), { max_tokens: 1000 }),
    );
    await r.sb.chat.completions.create(ask('x', { max_tokens: 10 }));
    const s = stateOf(r, 'oai0');
    expect(s.tpmUsage).toBeLessThan(100);
    // ~5000 tokens of the other application's, seen through x-ratelimit-remaining-tokens.
    expect(s.quota.anchoredUsage().tpm).toBeGreaterThan(4_500);
    expect(s.quota.upstreamRemaining.tpm?.remaining).toBeLessThan(5_500);
    expect(s.hasRoom({ input: 100, output: 5_000 })).toBe(false);
  });
});

describe('a 429 its own headers explain', () => {
  let r: Rig;
  afterEach(() => r.close());

  it('cools nothing: the view holds back the calls that do not fit and sends those that do', async () => {
    r = await rig(AZURE_10K);
    // Another application takes ~9 000 of the minute's 10 000 tokens, unseen.
    await otherApplication(r).chat.completions.create(
      ask('y'.repeat(32_000), { max_tokens: 1000 }),
    );
    const s = stateOf(r, 'oai0');
    // Our view had room for 2 000 more: the call goes out and the upstream refuses it.
    const big = () => r.sb.chat.completions.create(ask('x', { max_tokens: 2000 }));
    await expect(big()).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    expect(total(r)).toBe(2);
    expect(r.upstream.deployment('oai0').stats.byStatus[429]).toBe(1);
    // Its headers said why: the model is not cooling, and the view has no room for it either.
    expect(s.isCooling()).toBe(false);
    expect(s.hasRoom({ input: 10, output: 2000 })).toBe(false);
    // The next one of its size is held back without being sent ...
    await expect(big()).rejects.toThrow(/room expected/);
    expect(total(r)).toBe(2);
    // ... and a small call, which the upstream still admits, goes through.
    await expect(
      r.sb.chat.completions.create(ask('x', { max_tokens: 100 })),
    ).resolves.toBeDefined();
    expect(total(r)).toBe(3);
  });

  it("gives a refused call's charge back from the newest usage, where it was charged", async () => {
    const clock = new FakeClock();
    r = await rig({ ...AZURE_10K, clock: clock.now, ratelimitWindow: 60_000 });
    await r.sb.chat.completions.create(ask('x', { max_tokens: 100 }));
    clock.advance(5_000);
    await otherApplication(r).chat.completions.create(
      ask('y'.repeat(32_000), { max_tokens: 1000 }),
    );
    await expect(
      r.sb.chat.completions.create(ask('x', { max_tokens: 2000 })),
    ).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    const s = stateOf(r, 'oai0');
    const [first, refused, ...more] = s.quota.ownBuckets();
    expect(more).toEqual([]);
    // The first call's charge stays where it was charged, 5 s earlier ...
    expect(first!.tokens).toBeGreaterThan(100);
    expect(refused!.start - first!.start).toBe(5_000);
    // ... and none of the refused one's 2 000 is left as our usage (what a shared state store
    // would show the other replicas), though its request still counts.
    expect(refused!.tokens).toBe(0);
    expect(refused!.requests).toBe(1);
    // The other application's usage is in the view, as the 429's headers reported it.
    expect(s.quota.anchoredUsage().tpm).toBeGreaterThan(9_000);
  });

  it('still cools the model for a 429 the view cannot explain', async () => {
    r = await rig({ ...AZURE_10K, openai: 2 });
    r.upstream.deployment('oai0').fail({ kind: 'status', status: 429, retryAfterMs: 5_000 });
    r.upstream.deployment('oai1').fail({ kind: 'status', status: 429, retryAfterMs: 5_000 });
    await expect(
      r.sb.chat.completions.create(ask('x', { max_tokens: 100 })),
    ).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    for (const name of ['oai0', 'oai1']) {
      expect(stateOf(r, name).hasRoom({ input: 10, output: 100 })).toBe(false);
      expect(stateOf(r, name).isCooling()).toBe(true);
    }
  });
});

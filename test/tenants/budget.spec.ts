/**
 * A tenant over its budget: the first fallback model whose reserved price still fits takes the
 * call (a dearer one is passed over); when none fits, the SDK's 429 with `retry-after` at the end
 * of the budget's UTC period, and nothing reaches the upstream; the next period starts afresh.
 * One injected clock drives the switchboard and the simulated deployment.
 */
import OpenAI, { type RateLimitError } from 'openai';
import { createSwitchboard, type Price, type Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { FakeClock } from '../support/random';
import '../support/quiet-logs';

const MODEL = 'gpt-4o';
/** Dearer than the model: never fits where the model does not. */
const DEAR = 'gpt-4.1';
const MINI = 'gpt-4o-mini';
const PRICES: Record<string, Price> = {
  [MODEL]: { input: 2.5, output: 10 },
  [DEAR]: { input: 5, output: 20 },
  [MINI]: { input: 0.15, output: 0.6 },
};
/** Each answer reports this many output tokens: the call's whole max_tokens. */
const OUTPUT = 200;
/** 20:00 UTC: the budget's day ends in four hours. */
const T0 = Date.UTC(2026, 2, 10, 20, 0, 0);
const DAY_END = Date.UTC(2026, 2, 11);
/** USD per day: one call on gpt-4o (0.00275 reserved), then only a few on gpt-4o-mini. */
const BUDGET = 0.004;

describe('a tenant over its budget', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard;
  let clock: FakeClock;

  beforeEach(async () => {
    clock = new FakeClock(T0);
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'oai0', completionTokens: OUTPUT }],
      clock: clock.now,
    });
    sb = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'oai0',
          baseURL: upstream.deployment('oai0').openaiBaseURL,
          apiKey: 'k',
          models: [MODEL, DEAR, MINI].map((name) => ({ name, tpm: 10_000_000, rpm: 100_000 })),
        },
      ],
      pricing: PRICES,
      tenants: { initech: { budget: { usd: BUDGET, per: 'day' } } },
      fallbacks: { [MODEL]: [DEAR, MINI] },
      clock: clock.now,
    });
  });
  afterEach(async () => {
    await sb.close();
    await upstream.close();
  });

  /** 1 200 characters (300 tokens by the prompt estimate) and 200 reserved output. */
  const call = (tenant = 'initech') =>
    sb.chat.completions.create({
      model: MODEL,
      max_tokens: OUTPUT,
      messages: [{ role: 'user', content: 'x'.repeat(1200) }],
      tenant,
    });
  const sentTo = (model: string) =>
    upstream.deployment('oai0').requests.filter((r) => r.model === model).length;
  const cost = (usage: OpenAI.CompletionUsage, model: string) =>
    (usage.prompt_tokens * PRICES[model]!.input + usage.completion_tokens * PRICES[model]!.output) /
    1e6;

  it('goes to the first fallback whose price fits, then fails with retry-after at the end of the UTC day', async () => {
    const first = await call();
    expect(first.model).toBe(MODEL);
    let spent = cost(first.usage!, MODEL);
    // What is left no longer fits gpt-4o's reservation, nor gpt-4.1's: gpt-4o-mini takes it.
    expect(BUDGET - spent).toBeLessThan((300 * 2.5 + OUTPUT * 10) / 1e6);
    let onMini = 0;
    let refused: unknown;
    for (let i = 0; i < 40 && refused === undefined; i++) {
      try {
        const answer = await call();
        expect(answer.model).toBe(MINI);
        spent += cost(answer.usage!, MINI);
        onMini++;
      } catch (error) {
        refused = error;
      }
    }
    expect(onMini).toBeGreaterThan(1);
    expect(sentTo(MODEL)).toBe(1);
    expect(sentTo(DEAR)).toBe(0);
    expect(sentTo(MINI)).toBe(onMini);
    // Nothing fits what is left: the SDK's 429, room again when the UTC day ends.
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    const e = refused as InstanceType<typeof OpenAI.RateLimitError>;
    expect(e.status).toBe(429);
    expect(e.message).toMatch(/Tenant initech is over its budget limit/);
    expect(Number(e.headers?.get('retry-after-ms'))).toBe(DAY_END - clock.ms);
    expect(Number(e.headers?.get('retry-after'))).toBe(4 * 3600);
    expect(upstream.deployment('oai0').stats.requests).toBe(1 + onMini);
    // The settled spend is within the budget: the reservation held it there.
    expect(spent).toBeLessThanOrEqual(BUDGET + 1e-12);
    expect(sb.costs().other).toBe(0);
    expect(Math.abs(sb.costs().initech! - spent)).toBeLessThan(1e-9);

    // Later the same day, still refused; another tenant is not affected.
    clock.advance(3 * 3600_000);
    const later = await call().catch((error: unknown) => error);
    expect(Number((later as RateLimitError).headers?.get('retry-after'))).toBe(3600);
    expect((await call('globex')).model).toBe(MODEL);
    // A new UTC day is a new budget: gpt-4o again.
    clock.ms = DAY_END + 1_000;
    expect((await call()).model).toBe(MODEL);
  });

  it('a call that takes no fallback (fallbacks: false) fails at once with the 429', async () => {
    await call();
    const before = upstream.deployment('oai0').stats.requests;
    const error = await sb.chat.completions
      .create({
        model: MODEL,
        max_tokens: OUTPUT,
        messages: [{ role: 'user', content: 'x'.repeat(1200) }],
        tenant: 'initech',
        fallbacks: false,
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(Number((error as RateLimitError).headers?.get('retry-after-ms'))).toBe(DAY_END - T0);
    expect(upstream.deployment('oai0').stats.requests).toBe(before);
  });

  it('through sb.fetch, the 429 asks the client to come back at the end of the UTC day, past the one-minute cap of upstream waits', async () => {
    await call();
    const before = upstream.deployment('oai0').stats.requests;
    const res = await sb.fetch('http://switchboard/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-switchboard-tenant': 'initech' },
      body: JSON.stringify({
        model: MODEL,
        max_tokens: OUTPUT,
        messages: [{ role: 'user', content: 'x'.repeat(1200) }],
        fallbacks: false,
      }),
    });
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBe((DAY_END - T0) / 1000);
    expect(Number(res.headers.get('retry-after-ms'))).toBe(DAY_END - T0);
    const body = (await res.json()) as { error: { type: string } };
    expect(body.error.type).toBe('rate_limit_error');
    expect(upstream.deployment('oai0').stats.requests).toBe(before);
  });
});

import { documentedRules, ruleKindOf } from '../../src/planning/documented-rules';
import type { UpstreamCall } from '../../src/planning/upstream-rules';
import { VirtualTime } from '../../src/planning/virtual-time';
import type { DeploymentConfig, ModelConfig } from 'nestjs-switchboard';

const T0 = 1_767_603_600_000;
const call = (input: number, maxTokens?: number, cached = 0, output = 50): UpstreamCall => ({
  input,
  cached,
  output,
  maxTokens,
});
const azure = (model: ModelConfig): DeploymentConfig => ({
  provider: 'openai',
  name: 'east',
  baseURL: 'https://east.openai.azure.com/openai/v1/',
  apiKey: 'k',
  models: [model],
});
const foundry = (model: ModelConfig): DeploymentConfig => ({
  provider: 'anthropic',
  name: 'foundry',
  resource: 'r',
  apiKey: 'k',
  models: [model],
});
const quotaOf = (deployment: DeploymentConfig) =>
  documentedRules.quotaFor(deployment, deployment.models[0]!);

describe('documentedRules: the vendors’ rules, per kind of upstream, on the caller’s clock', () => {
  it('tells the kinds apart as the switchboard does, PTU by the model’s provisioned flag', () => {
    const model = { name: 'gpt-4.1', tpm: 60_000 };
    expect(ruleKindOf(azure(model), model)).toBe('azure');
    const ptu = { ...model, provisioned: true };
    expect(ruleKindOf(azure(ptu), ptu)).toBe('azure-ptu');
    const openai: DeploymentConfig = { provider: 'openai', name: 'o', apiKey: 'k', models: [ptu] };
    expect(ruleKindOf(openai, model)).toBe('openai');
    expect(ruleKindOf(foundry(model), model)).toBe('anthropic');
  });

  it('Azure standard: prompt + max_tokens per minute, kept; rpm / 6 per 10 s (6 RPM per 1 000 TPM by default), told in the headers', () => {
    const q = quotaOf(azure({ name: 'm', tpm: 10_000 }));
    expect(q.limits).toEqual([{ name: 'tpm', perMinute: 10_000 }]);
    const first = q.admit(call(1_000, 500), T0);
    expect(first.admitted).toBe(true);
    // 60 RPM: the requests headers speak of 10 per 10 s.
    expect(first.headers).toMatchObject({
      'x-ratelimit-limit-requests': 10,
      'x-ratelimit-remaining-requests': 9,
      'x-ratelimit-remaining-tokens': 8_500,
    });
    q.settle(first, 50, T0 + 900);
    // What the answer used does not give anything back.
    expect(q.counted(first, 50, 0)).toBe(1_500);
    for (let i = 1; i < 10; i++) expect(q.admit(call(10, 10), T0 + i).admitted).toBe(true);
    const refused = q.admit(call(10, 10), T0 + 500);
    expect(refused).toMatchObject({ admitted: false, limit: 'requests' });
    expect(refused.error!.message).toMatch(/exceeded call rate limit/);
    expect(refused.headers['retry-after-ms']).toBe(9_500);
    expect(refused.headers['x-ratelimit-limit-requests']).toBeUndefined();
    expect(q.admit(call(10, 10), T0 + 10_000).admitted).toBe(true);
    // Uncapped: Azure's default reservation, or the configured one.
    const uncapped = q.admit(call(100), T0 + 10_001);
    expect(q.counted(uncapped, 50, 0)).toBe(100 + 648);
    const own = quotaOf(azure({ name: 'm', tpm: 10_000, outputReservation: 16 }));
    expect(own.counted(own.admit(call(100), T0), 50, 0)).toBe(116);
  });

  it('Azure standard with requestWindow 1s: rpm / 60 a second', () => {
    const q = quotaOf(azure({ name: 'm', tpm: 100_000, rpm: 600, requestWindow: '1s' }));
    for (let i = 0; i < 10; i++) expect(q.admit(call(1, 1), T0 + i).admitted).toBe(true);
    expect(q.admit(call(1, 1), T0 + 10)).toMatchObject({ admitted: false, retryAfterMs: 990 });
    expect(q.admit(call(1, 1), T0 + 1_000).admitted).toBe(true);
  });

  it('Claude: cache reads free of ITPM, OTPM counts the output as it ends, buckets refill with the clock, headers summed', () => {
    const q = quotaOf(foundry({ name: 'claude', rpm: 1_000, itpm: 30_000, otpm: 8_000 }));
    expect(q.limits.map((l) => l.name)).toEqual(['itpm', 'otpm']);
    // max_tokens above the OTPM is no reason to refuse: only actual output counts.
    const first = q.admit(call(20_000, 16_000, 15_000), T0);
    expect(first.admitted).toBe(true);
    expect(first.headers).toMatchObject({
      'anthropic-ratelimit-input-tokens-remaining': 25_000,
      'anthropic-ratelimit-tokens-limit': 38_000,
      'anthropic-ratelimit-tokens-remaining': 33_000,
    });
    expect(q.counted(first, 8_000, 0)).toBe(5_000);
    q.settle(first, 8_000, T0 + 1_000);
    expect(q.counted(first, 8_000, 1)).toBe(8_000);
    // The output bucket is empty: refused until it refills, at 8 000 a minute.
    const refused = q.admit(call(100, 100), T0 + 1_000);
    expect(refused).toMatchObject({ admitted: false, limit: 'output_tokens' });
    expect(refused.error).toMatchObject({ type: 'rate_limit_error' });
    expect(refused.headers['retry-after']).toBe(1);
    expect(q.admit(call(100, 100), T0 + 1_000 + 60_000).admitted).toBe(true);
    // A model that still counts cache reads.
    const old = quotaOf(foundry({ name: 'c', itpm: 30_000, cacheReadsCountInput: true }));
    expect(old.counted(old.admit(call(20_000, 100, 15_000), T0), 10, 0)).toBe(20_000);
  });

  it('Azure PTU: admitted below 100 % whatever the size, cached input free, output weighted and corrected, no headers', () => {
    const q = quotaOf(azure({ name: 'gpt-4.1', tpm: 60_000, provisioned: true, outputWeight: 4 }));
    const big = q.admit(call(120_000, 1_000, 40_000), T0);
    expect(big).toMatchObject({ admitted: true, headers: {} });
    q.settle(big, 300, T0 + 2_000);
    expect(q.counted(big, 300, 0)).toBe(80_000 + 300 * 4);
    const refused = q.admit(call(10, 10), T0 + 2_000);
    expect(refused).toMatchObject({ admitted: false, limit: 'tokens' });
    expect(refused.headers['retry-after-ms']).toBeGreaterThan(0);
    // Utilization drains at the capacity (1 000 a second): 19.2 s later it is below 100 %.
    expect(refused.retryAfterMs).toBeCloseTo(19_200, -1);
    expect(q.admit(call(10, 10), T0 + 2_000 + refused.retryAfterMs).admitted).toBe(true);
  });

  it('OpenAI: buckets refilled continuously, prompt + max_tokens charged', () => {
    const deployment: DeploymentConfig = {
      provider: 'openai',
      name: 'o',
      apiKey: 'k',
      models: [{ name: 'gpt-4o', tpm: 6_000, rpm: 60 }],
    };
    const q = quotaOf(deployment);
    expect(q.admit(call(5_000, 1_000), T0).admitted).toBe(true);
    const refused = q.admit(call(900, 100), T0);
    expect(refused).toMatchObject({ admitted: false, limit: 'tokens', retryAfterMs: 10_000 });
    expect(refused.error!.message).toMatch(/tokens per min/);
    expect(q.admit(call(900, 100), T0 + 10_000).admitted).toBe(true);
  });
});

describe('VirtualTime', () => {
  it('runs timers, immediates and arrivals in time order, and restores the real timers', async () => {
    const time = new VirtualTime(1_000);
    const realSetTimeout = setTimeout;
    const realNow = Date.now;
    const seen: string[] = [];
    const arrivals = [1_000, 1_500, 90_000];
    let next = 0;
    await time.run(
      () => arrivals[next] ?? Infinity,
      () => {
        const at = arrivals[next++]!;
        seen.push(`arrive ${at} at ${Date.now()}`);
        if (at === 1_000) {
          setTimeout(() => seen.push(`timer at ${Date.now()}`), 60_000);
          const cancelled = setTimeout(() => seen.push('cancelled'), 10);
          clearTimeout(cancelled);
          void Promise.resolve().then(() =>
            setImmediate(() => seen.push(`immediate at ${Date.now()}`)),
          );
        }
      },
    );
    expect(seen).toEqual([
      'arrive 1000 at 1000',
      'immediate at 1000',
      'arrive 1500 at 1500',
      'timer at 61000',
      'arrive 90000 at 90000',
    ]);
    expect(setTimeout).toBe(realSetTimeout);
    expect(Date.now).toBe(realNow);
  });
});

import { DeploymentQuota, type QuotaDemand, type QuotaSettings } from '../../src/testing/quota';
import { quotaSettings } from '../support/quota-settings';
import { openaiDuration } from '../../src/testing/rules/openai';
import type { CompletionPlan } from '../../src/testing/wire/common';

function quotaWith(settings: Partial<QuotaSettings>) {
  const full = quotaSettings(settings);
  return new DeploymentQuota(() => full, 1, 10_000);
}

const plan = (promptTokens: number, maxTokens?: number, cacheReadTokens = 0): CompletionPlan => ({
  api: 'chat',
  model: 'm',
  stream: false,
  includeUsage: false,
  text: '',
  promptTokens,
  completionTokens: 1,
  truncated: false,
  maxTokens,
  cacheReadTokens,
});

describe('OpenAI rules', () => {
  it('refills requests and tokens continuously and says when each bucket is full again', () => {
    const quota = quotaWith({ rules: 'openai', rpm: 60, tpm: 6_000 });
    const demand: QuotaDemand = quota.demand('openai', plan(1_000, 2_000));
    expect(demand.tokens).toBe(3_000);
    expect(quota.admit('openai', demand, 0)).toMatchObject({ ok: true });
    expect(quota.admit('openai', demand, 0)).toMatchObject({ ok: true });
    // Empty: 3000 tokens come back in 30 s at 6000 a minute, not at the minute's end.
    expect(quota.admit('openai', demand, 0)).toMatchObject({ ok: false, retryMs: 30_000 });
    expect(quota.admit('openai', demand, 30_000)).toMatchObject({ ok: true });
    expect(quota.headers('openai', 30_000)).toEqual({
      'x-ratelimit-limit-requests': 60,
      // three taken, two of them refilled over the 30 s
      'x-ratelimit-remaining-requests': 59,
      'x-ratelimit-reset-requests': '1s',
      'x-ratelimit-limit-tokens': 6_000,
      'x-ratelimit-remaining-tokens': 0,
      'x-ratelimit-reset-tokens': '1m0s',
    });
    expect(quota.retryHeaders('openai', 1_500)).toEqual({ 'retry-after': 2 });
  });

  it('enforces a per-minute request limit per second when told to ("quantized"), as a bucket', () => {
    const full = quotaSettings({ rules: 'openai', rpm: 600, tpm: 1_000_000 });
    const quota = new DeploymentQuota(() => full, 1, 1_000);
    const demand = quota.demand('openai', plan(10, 10));
    // 10 a second: the eleventh waits 100 ms, while the minute's header shows 590 left.
    for (let i = 0; i < 10; i++)
      expect(quota.admit('openai', demand, 0)).toMatchObject({ ok: true });
    expect(quota.admit('openai', demand, 0)).toMatchObject({
      ok: false,
      reason: 'requests',
      retryMs: 100,
    });
    expect(quota.headers('openai', 0)['x-ratelimit-remaining-requests']).toBe(590);
    expect(quota.admit('openai', demand, 100)).toMatchObject({ ok: true });
  });

  it('writes durations as OpenAI does', () => {
    expect(openaiDuration(20)).toBe('20ms');
    expect(openaiDuration(1_500)).toBe('1.5s');
    expect(openaiDuration(360_000)).toBe('6m0s');
  });
});

describe('Azure PTU rules', () => {
  it('admits while utilization is below 100 %, weighs output, leaves cached input free', () => {
    const quota = quotaWith({ rules: 'azure-ptu', tpm: 60_000, outputWeight: 4 });
    // 10 000 prompt tokens, 5 000 of them cached, max_tokens 1 000 at x4: 9 000
    const demand = quota.demand('openai', plan(10_000, 1_000, 5_000));
    expect(demand.tokens).toBe(9_000);
    for (let i = 0; i < 6; i++)
      expect(quota.admit('openai', demand, 0)).toMatchObject({ ok: true });
    // 54 000 of 60 000: still below 100 %, so a call bigger than what is left goes in
    const seventh = quota.admit('openai', demand, 0);
    expect(seventh).toMatchObject({ ok: true });
    const refused = quota.admit('openai', demand, 0);
    // 3000 over, drained at 1000 a second
    expect(refused).toMatchObject({ ok: false, reason: 'tokens' });
    if (refused.ok) throw new Error('expected a refusal');
    expect(refused.retryMs).toBeCloseTo(3_001, -1);
    expect(quota.retryHeaders('openai', refused.retryMs)).toEqual({
      'retry-after': 4,
      'retry-after-ms': 3_001,
    });
    // no x-ratelimit-* headers on a provisioned deployment
    expect(quota.headers('openai', 0)).toEqual({});
    // the answer used 100 of its 1000: 3600 input-equivalents come back
    if (!seventh.ok) throw new Error('expected admission');
    quota.settle(seventh.charge, 100, 0);
    expect(quota.admit('openai', demand, 0)).toMatchObject({ ok: true });
  });
});

describe('Azure standard rules', () => {
  it('reports the per-second request limit when requests are enforced per second', () => {
    const quota = new DeploymentQuota(
      () => ({
        quota: 'faithful',
        rpm: 600,
        tpm: 100_000,
        itpm: 0,
        otpm: 0,
        inferredMaxTokens: 4096,
        chargeMaxTokens: false,
      }),
      1,
      1_000,
    );
    quota.admit('openai', quota.demand('openai', plan(10, 10)), 0);
    expect(quota.headers('openai', 250)).toMatchObject({
      'x-ratelimit-limit-requests': 10,
      'x-ratelimit-remaining-requests': 9,
      'x-ratelimit-reset-requests': 0.75,
    });
  });
});

import {
  DeploymentQuota,
  FixedWindow,
  TokenBucket,
  type QuotaDemand,
  type QuotaSettings,
} from '../../src/testing/quota';
import { quotaSettings } from '../support/quota-settings';

const demand = (tokens: number, extra: Partial<QuotaDemand> = {}): QuotaDemand => ({
  requests: 1,
  tokens,
  inputTokens: tokens,
  outputTokens: 0,
  ...extra,
});

function quotaWith(settings: Partial<QuotaSettings>, requestWindowMs = 10_000, timeScale = 1) {
  const full = quotaSettings(settings);
  return { quota: new DeploymentQuota(() => full, timeScale, requestWindowMs), settings: full };
}

describe('FixedWindow', () => {
  it('opens with the first charge and closes after its length', () => {
    const window = new FixedWindow(60_000);
    window.roll(1_000);
    window.used = 5;
    expect(window.remainingMs(31_000)).toBe(30_000);
    window.roll(60_999);
    expect(window.used).toBe(5);
    window.roll(61_000);
    expect(window.used).toBe(0);
    expect(window.remainingMs(61_000)).toBe(60_000);
  });
});

describe('TokenBucket', () => {
  it('refills continuously up to capacity', () => {
    const bucket = new TokenBucket(600, 60_000);
    bucket.take(600, 0);
    expect(bucket.available(0)).toBe(0);
    expect(bucket.available(10_000)).toBeCloseTo(100);
    expect(bucket.waitMs(300, 10_000)).toBeCloseTo(20_000);
    expect(bucket.fullInMs(10_000)).toBeCloseTo(50_000);
    expect(bucket.available(120_000)).toBe(600);
    expect(bucket.waitMs(601, 120_000)).toBe(Infinity);
    bucket.take(100, 120_000);
    bucket.give(500, 120_000);
    expect(bucket.available(120_000)).toBe(600);
  });
});

describe('DeploymentQuota, Azure rules', () => {
  it('charges at admission and keeps the charge for the fixed minute', () => {
    const { quota } = quotaWith({ tpm: 1000 });
    expect(quota.admit('openai', demand(600), 0)).toMatchObject({ ok: true });
    const refused = quota.admit('openai', demand(600), 59_000);
    expect(refused).toMatchObject({ ok: false, reason: 'tokens', retryMs: 1_000, never: false });
    expect(quota.admit('openai', demand(600), 60_000)).toMatchObject({ ok: true });
    expect(quota.admit('openai', demand(1001), 200_000)).toMatchObject({
      ok: false,
      never: true,
    });
  });

  it('allows rpm / 6 per 10 s, or rpm / 60 per 1 s', () => {
    const tenSeconds = quotaWith({ rpm: 60 }).quota;
    for (let i = 0; i < 10; i++) {
      expect(tenSeconds.admit('openai', demand(1), i)).toMatchObject({ ok: true });
    }
    expect(tenSeconds.admit('openai', demand(1), 100)).toMatchObject({
      ok: false,
      reason: 'requests',
      retryMs: 9_900,
    });
    expect(tenSeconds.admit('openai', demand(1), 10_000)).toMatchObject({ ok: true });

    const oneSecond = quotaWith({ rpm: 60 }, 1_000).quota;
    expect(oneSecond.admit('openai', demand(1), 0)).toMatchObject({ ok: true });
    expect(oneSecond.admit('openai', demand(1), 500)).toMatchObject({ ok: false, retryMs: 500 });
    expect(oneSecond.admit('openai', demand(1), 1_000)).toMatchObject({ ok: true });
  });

  it('reports limits, remaining and resets', () => {
    const { quota } = quotaWith({ tpm: 1000, rpm: 60 });
    quota.admit('openai', demand(250), 0);
    expect(quota.headers('openai', 2_500)).toEqual({
      // the requests of Azure's 10 s window: 60 RPM is 10 there
      'x-ratelimit-limit-requests': 10,
      'x-ratelimit-remaining-requests': 9,
      'x-ratelimit-reset-requests': 7.5,
      'x-ratelimit-limit-tokens': 1000,
      'x-ratelimit-remaining-tokens': 750,
      'x-ratelimit-reset-tokens': 57.5,
    });
  });

  it('divides the windows by timeScale', () => {
    const { quota } = quotaWith({ tpm: 100 }, 10_000, 60);
    quota.admit('openai', demand(100), 0);
    expect(quota.admit('openai', demand(1), 999)).toMatchObject({ ok: false, retryMs: 1 });
    expect(quota.admit('openai', demand(1), 1_000)).toMatchObject({ ok: true });
  });

  it('charges forced usage even over the limit', () => {
    const { quota } = quotaWith({ tpm: 100 });
    expect(quota.admit('openai', demand(150), 0, true)).toMatchObject({ ok: true });
    expect(quota.headers('openai', 1)['x-ratelimit-remaining-tokens']).toBe(0);
  });
});

describe('DeploymentQuota, Anthropic rules', () => {
  it('keeps requests, input and output buckets apart and refills them over the minute', () => {
    const { quota } = quotaWith({ rpm: 60, itpm: 1000, otpm: 500 });
    const big = demand(0, { inputTokens: 900, outputTokens: 100 });
    expect(quota.admit('anthropic', big, 0)).toMatchObject({ ok: true });
    const refused = quota.admit('anthropic', demand(0, { inputTokens: 200, outputTokens: 10 }), 0);
    // 100 input tokens missing, refilled at 1000 per minute: 6 s.
    expect(refused).toMatchObject({ ok: false, reason: 'input_tokens', retryMs: 6_000 });
    const later = quota.admit(
      'anthropic',
      demand(0, { inputTokens: 200, outputTokens: 10 }),
      6_000,
    );
    expect(later).toMatchObject({ ok: true });
  });

  it('counts the output an answer produced, not max_tokens, and refuses only an empty bucket', () => {
    const { quota } = quotaWith({ otpm: 1000 });
    const admitted = quota.admit('anthropic', demand(0, { inputTokens: 5, outputTokens: 800 }), 0);
    if (!admitted.ok) throw new Error('expected admission');
    expect(quota.headers('anthropic', 0)['anthropic-ratelimit-output-tokens-remaining']).toBe(1000);
    quota.settle(admitted.charge, 600, 0);
    // 400 left, rounded to the nearest thousand
    expect(quota.headers('anthropic', 0)['anthropic-ratelimit-output-tokens-remaining']).toBe(0);
    const second = quota.admit('anthropic', demand(0, { inputTokens: 5 }), 0);
    if (!second.ok) throw new Error('expected admission');
    quota.settle(second.charge, 1_000, 0);
    // 600 over: refused until the bucket holds a token again, at 1000 a minute
    expect(quota.admit('anthropic', demand(0, { inputTokens: 5 }), 0)).toMatchObject({
      ok: false,
      reason: 'output_tokens',
      retryMs: 36_060,
    });
  });

  it('enforces a per-minute request limit per second when told to, as a bucket', () => {
    const { quota } = quotaWith({ rpm: 600 }, 1_000);
    // 10 a second: the eleventh waits 100 ms, while the minute's header shows 590 left.
    for (let i = 0; i < 10; i++) {
      expect(quota.admit('anthropic', demand(0, { inputTokens: 1 }), 0)).toMatchObject({
        ok: true,
      });
    }
    expect(quota.admit('anthropic', demand(0, { inputTokens: 1 }), 0)).toMatchObject({
      ok: false,
      reason: 'requests',
      retryMs: 100,
    });
    expect(quota.headers('anthropic', 0)['anthropic-ratelimit-requests-remaining']).toBe(590);
    expect(quota.admit('anthropic', demand(0, { inputTokens: 1 }), 100)).toMatchObject({
      ok: true,
    });
  });

  it('reports the anthropic-ratelimit headers with RFC 3339 resets', () => {
    const { quota } = quotaWith({ rpm: 60, itpm: 6000, otpm: 600 });
    const admitted = quota.admit('anthropic', demand(0, { inputTokens: 600 }), 0);
    if (!admitted.ok) throw new Error('expected admission');
    quota.settle(admitted.charge, 300, 0);
    const headers = quota.headers('anthropic', 0);
    expect(headers).toMatchObject({
      'anthropic-ratelimit-requests-limit': 60,
      'anthropic-ratelimit-requests-remaining': 59,
      'anthropic-ratelimit-requests-reset': new Date(1_000).toISOString(),
      'anthropic-ratelimit-input-tokens-limit': 6000,
      // 5 400 left, to the nearest thousand
      'anthropic-ratelimit-input-tokens-remaining': 5000,
      'anthropic-ratelimit-input-tokens-reset': new Date(6_000).toISOString(),
      'anthropic-ratelimit-output-tokens-limit': 600,
      // 300 left
      'anthropic-ratelimit-output-tokens-remaining': 0,
      'anthropic-ratelimit-output-tokens-reset': new Date(30_000).toISOString(),
      // the sum of input and output, remaining (5 700) to the nearest thousand
      'anthropic-ratelimit-tokens-limit': 6600,
      'anthropic-ratelimit-tokens-remaining': 6000,
      'anthropic-ratelimit-tokens-reset': new Date(30_000).toISOString(),
    });
  });

  it('applies the friendly windows to Anthropic routes in friendly mode', () => {
    const { quota } = quotaWith({ quota: 'friendly', tpm: 100 });
    expect(quota.admit('anthropic', demand(100), 0)).toMatchObject({ ok: true });
    expect(quota.admit('anthropic', demand(1), 1)).toMatchObject({ ok: false, reason: 'tokens' });
    expect(quota.headers('anthropic', 1)).toEqual({ 'x-ratelimit-remaining-tokens': 0 });
  });
});

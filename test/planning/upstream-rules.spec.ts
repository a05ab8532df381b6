import { azureStandardRules } from '../../src/planning/upstream-rules';
import { VirtualTime } from '../../src/planning/virtual-time';

const call = (input: number, maxTokens?: number) => ({ input, cached: 0, output: 50, maxTokens });

describe('azureStandardRules: Azure OpenAI standard deployments', () => {
  const T0 = 1_767_603_600_000;

  it('counts prompt + max_tokens against TPM over the last minute, and says when room returns', () => {
    const q = azureStandardRules.quotaFor('east', 'openai', { name: 'm', tpm: 3_000, rpm: 6_000 });
    expect(q.admit(call(1_000, 500), T0).admitted).toBe(true);
    const second = q.admit(call(1_000, 500), T0 + 10_000);
    expect(second).toMatchObject({ admitted: true });
    expect(second.headers['x-ratelimit-remaining-tokens']).toBe('0');
    const refused = q.admit(call(10, 1), T0 + 20_000);
    expect(refused.admitted).toBe(false);
    // The first call leaves the window a minute after its second began.
    expect(refused.retryAfterMs).toBe(40_000);
    expect(q.admit(call(10, 1), T0 + 60_000).admitted).toBe(true);
    // Without a cap, the output counts.
    expect(q.counted(call(100))).toBe(150);
  });

  it('allows rpm / 6 requests per 10 s, and 6 RPM per 1 000 TPM when rpm is not set', () => {
    const q = azureStandardRules.quotaFor('east', 'openai', { name: 'm', tpm: 10_000 });
    // 60 RPM: 10 per 10 s.
    for (let i = 0; i < 10; i++) expect(q.admit(call(1, 1), T0 + i).admitted).toBe(true);
    const refused = q.admit(call(1, 1), T0 + 500);
    expect(refused.admitted).toBe(false);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(10_000);
    expect(q.admit(call(1, 1), T0 + 10_000).admitted).toBe(true);
  });

  it('an unlimited model admits everything', () => {
    const q = azureStandardRules.quotaFor('east', 'openai', { name: 'm' });
    for (let i = 0; i < 100; i++) expect(q.admit(call(100_000, 1_000), T0).admitted).toBe(true);
    expect(q.tokensPerMinute).toBe(0);
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

import { DEFAULT_OUTPUT_RESERVATION, QuotaLedger } from '../../src/quota/quota-ledger';
import { upstreamKind } from '../../src/quota/upstream-kind';
import { FakeClock } from '../support/random';

describe('the kind of upstream', () => {
  it('is told by provider and baseURL', () => {
    expect(upstreamKind('openai', 'https://east.openai.azure.com/openai/v1/')).toBe('azure');
    expect(upstreamKind('openai', 'https://res.services.ai.azure.com/models')).toBe('azure');
    expect(upstreamKind('openai', 'http://127.0.0.1:4000/oai0/openai/v1/')).toBe('azure');
    expect(upstreamKind('openai', undefined)).toBe('openai');
    expect(upstreamKind('openai', 'https://api.openai.com/v1')).toBe('openai');
    expect(upstreamKind('openai', 'http://127.0.0.1:4000/oai0/v1/')).toBe('openai');
    expect(upstreamKind('anthropic', 'https://res.services.ai.azure.com/anthropic/')).toBe(
      'anthropic',
    );
    // Unreadable: the rules followed before the kinds were told apart.
    expect(upstreamKind('openai', 'not a url')).toBe('azure');
  });

  it('sets the output reserved for an uncapped call until configured or learned', () => {
    const clock = new FakeClock();
    const uncapped = { input: 100, output: 0, uncapped: 1 };
    const azure = new QuotaLedger({ tpm: 1_000 }, clock.now, { upstream: 'azure' });
    expect(azure.outputReservation).toBe(DEFAULT_OUTPUT_RESERVATION.azure);
    expect(azure.outputReservation).toBe(648);
    azure.admit({ ...uncapped });
    expect(azure.tokensAt(clock.ms)).toBe(748);
    const openai = new QuotaLedger({ tpm: 1_000 }, clock.now, { upstream: 'openai' });
    expect(openai.outputReservation).toBe(0);
    const configured = new QuotaLedger({ tpm: 1_000, outputReservation: 0 }, clock.now, {
      upstream: 'azure',
    });
    configured.admit({ ...uncapped });
    expect(configured.tokensAt(clock.ms)).toBe(100);
    // Without a kind: Azure's rules, as before the kinds were told apart.
    expect(new QuotaLedger({ tpm: 1_000 }, clock.now).outputReservation).toBe(648);
  });
});

describe("OpenAI's buckets", () => {
  it('give room back at the limit a minute, read the requests header as the minute, no window end', () => {
    const clock = new FakeClock();
    // The bucket's own arithmetic: no ramp (ramp.spec) holds the 60 calls back.
    const quota = new QuotaLedger({ tpm: 60_000, rpm: 60_000, rampUp: false }, clock.now, {
      upstream: 'openai',
    });
    quota.slide(60_000);
    const call = { input: 1_000, output: 0 };
    const sent = Array.from({ length: 60 }, () => ({ ...call }));
    for (const admission of sent) quota.admit(admission);
    expect(quota.hasRoom(call)).toBe(false);
    // No short request window until a 429 shows one: the ramp's first step is a second's share
    // and one request.
    expect(quota.recent()).toEqual({ used: 60, limit: 1_001 });
    // 1 000 tokens come back each second, not when a minute has slid past them.
    expect(quota.roomAt(call)).toBe(1_000);
    clock.advance(1_000);
    expect(quota.hasRoom(call)).toBe(true);
    expect(quota.tokensAt(clock.ms)).toBeCloseTo(59_000);
    for (const admission of sent) quota.settle(admission, { input: 1_000, output: 0 });
    // The requests header speaks of the minute's bucket; a reset header is "full again in".
    quota.observe(
      new Headers({
        'x-ratelimit-limit-requests': '60000',
        'x-ratelimit-remaining-requests': '59940',
        'x-ratelimit-reset-requests': '6s',
        'x-ratelimit-limit-tokens': '60000',
        'x-ratelimit-remaining-tokens': '1000',
        'x-ratelimit-reset-tokens': '59s',
      }),
    );
    expect(quota.limits.rpm.value).toBe(60_000);
    expect(quota.anchoredUsage().rpm).toBeCloseTo(60);
    clock.advance(30_000);
    // Half a minute refilled half the bucket: nothing was forgotten at once.
    expect(quota.anchoredUsage().tpm).toBeGreaterThan(25_000);
    expect(quota.anchoredUsage().tpm).toBeLessThan(35_000);
  });
});

import { QuotaLedger } from '../../src/quota/quota-ledger';
import { requestLimitHit } from '../../src/quota/request-window';
import { FakeClock } from '../support/random';

/** A model on Azure OpenAI with 600 RPM, counted over a sliding minute. */
function ledger(extra: { requestWindow?: '1s' | '10s'; rpm?: number } = {}) {
  const clock = new FakeClock();
  const quota = new QuotaLedger({ tpm: 1_000_000, rpm: 600, ...extra }, clock.now, {
    upstream: 'azure',
  });
  quota.slide(60_000);
  return { clock, quota };
}

const AZURE_CALLS =
  '429 Requests to the ChatCompletions_Create Operation under Azure OpenAI API version ' +
  '2024-10-21 have exceeded call rate limit of your current OpenAI S0 pricing tier. Please ' +
  'retry after 1 second.';

describe('a 429 that says the request limit was hit', () => {
  it('is told by its words', () => {
    expect(requestLimitHit({ status: 429, message: AZURE_CALLS })).toBe(true);
    expect(requestLimitHit({ status: 429, message: 'x', error: { message: AZURE_CALLS } })).toBe(
      true,
    );
    expect(
      requestLimitHit({
        status: 429,
        message: '429 Rate limit reached for gpt-4o on requests per min (RPM): Limit 3',
      }),
    ).toBe(true);
    expect(requestLimitHit({ status: 429, message: 'x', type: 'requests' })).toBe(true);
    expect(
      requestLimitHit({
        status: 429,
        message: AZURE_CALLS.replace('call rate limit', 'token rate limit'),
      }),
    ).toBe(false);
    expect(requestLimitHit({ status: 500, message: AZURE_CALLS })).toBe(false);
    expect(requestLimitHit(undefined)).toBe(false);
  });

  it('switches to the 1 s window when our 10 s count had room and the wait is a second', () => {
    const { quota } = ledger();
    for (let i = 0; i < 20; i++) quota.admit({ input: 10, output: 10 });
    quota.requestsRefused(800);
    expect(quota.burst.period).toBe('1s');
    expect(quota.burst.limit).toBe(10);
    expect(quota.hasRoom({ input: 10, output: 10 })).toBe(false);
  });

  it('keeps the 10 s window when the wait is longer, our count explains it, or it is configured', () => {
    const longer = ledger();
    longer.quota.admit({ input: 10, output: 10 });
    longer.quota.requestsRefused(4_000);
    longer.quota.requestsRefused(undefined);
    expect(longer.quota.burst.period).toBe('10s');

    // 600 RPM is 100 per 10 s: the 101st request fills it by our own count.
    const full = ledger();
    for (let i = 0; i < 101; i++) full.quota.admit({ input: 10, output: 10 });
    full.quota.requestsRefused(500);
    expect(full.quota.burst.period).toBe('10s');

    const configured = ledger({ requestWindow: '10s' });
    configured.quota.requestsRefused(500);
    expect(configured.quota.burst.period).toBe('10s');
  });

  it('takes a learned rpm as sixty of the header limit once the window is 1 s', () => {
    const { quota } = ledger({ rpm: undefined });
    quota.observe(
      new Headers({ 'x-ratelimit-limit-requests': '10', 'x-ratelimit-remaining-requests': '9' }),
    );
    expect(quota.limits.rpm.value).toBe(60);
    quota.requestsRefused(500);
    expect(quota.burst.period).toBe('1s');
    expect(quota.limits.rpm.value).toBe(600);
    expect(quota.burst.limit).toBe(10);
  });
});

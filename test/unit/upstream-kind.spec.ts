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

import { DRAIN_HOLD_MS } from '../../src/quota/drain-count';
import { QuotaLedger } from '../../src/quota/quota-ledger';
import { FakeClock } from '../support/random';

const T0 = 1_700_000_000_000;

/**
 * OpenAI's token buckets drain continuously. A draw reads a bucket's room from the model's hot row
 * for DRAIN_HOLD_MS at a time (the count only falls, so what the row holds over-counts it), and a
 * call held back by that row waits until it lapses, never in a loop of zero waits.
 */
describe('a draining count in the hot row', () => {
  const ledger = (clock: FakeClock) =>
    new QuotaLedger({ tpm: 60_000, rpm: 6_000 }, clock.now, {
      upstream: 'openai',
    });

  it('keeps the utilization for DRAIN_HOLD_MS, never below what the bucket holds', () => {
    const clock = new FakeClock(T0);
    const quota = ledger(clock);
    quota.admit({ input: 30_000, output: 0 });
    expect(quota.util()).toBeCloseTo(0.5, 5);
    // 1 000 tokens drain a second: 50 ms later the bucket holds 29 950, the row still 30 000.
    clock.advance(DRAIN_HOLD_MS / 2);
    expect(quota.util()).toBeCloseTo(0.5, 5);
    expect(quota.anchoredUsage().tpm).toBeCloseTo(30_000 - DRAIN_HOLD_MS / 2, 5);
    // Once it lapses, it is read again.
    clock.advance(DRAIN_HOLD_MS / 2);
    expect(quota.util()).toBeCloseTo((30_000 - DRAIN_HOLD_MS) / 60_000, 5);
  });

  it('holds a call back at most DRAIN_HOLD_MS longer than the bucket would, with a wait that is never 0', () => {
    const clock = new FakeClock(T0);
    const quota = ledger(clock);
    quota.admit({ input: 60_000, output: 0 });
    const call = { input: 10, output: 0 };
    // 10 tokens drain in 10 ms.
    expect(quota.roomAt(call)).toBe(10);
    quota.util();
    clock.advance(10);
    // The bucket has room now; the row, read at T0, says none until it lapses at T0 + DRAIN_HOLD_MS.
    const wait = quota.roomAt(call);
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(DRAIN_HOLD_MS - 10);
    clock.advance(wait);
    expect(quota.hasRoom(call)).toBe(true);
    expect(quota.roomAt(call)).toBe(0);
  });
});

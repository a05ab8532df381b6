import { WindowCount } from '../../src/quota/window-count';
import { QuotaLedger } from '../../src/quota/quota-ledger';
import { FakeClock } from '../support/random';

/** A ledger counting over a sliding window, as a shared state store reads its buckets. */
function slidingLedger(clock: FakeClock, windowMs = 60_000, buckets = 60): QuotaLedger {
  const ledger = new QuotaLedger({}, clock.now);
  ledger.slide(windowMs, buckets);
  return ledger;
}

/** One count's window, sliding (the requests' kind: its newest sixth is counted apart). */
function sliding(clock: FakeClock, windowMs = 60_000, buckets = 60): WindowCount {
  const w = new WindowCount(clock.now, true);
  w.configure('sliding', windowMs, buckets);
  return w;
}

describe('WindowCount', () => {
  it('starts every bucket at a multiple of bucketMs, whatever the clock said at configure()', () => {
    const clock = new FakeClock(1_700_000_000_123);
    const ledger = slidingLedger(clock);
    expect(ledger.bucketMs).toBe(1000);
    ledger.spend(10, 1);
    clock.advance(2_500);
    ledger.spend(20, 2);
    const buckets = ledger.ownBuckets();
    expect(buckets).toEqual([
      { start: 1_700_000_000_000, tokens: 10, requests: 1 },
      { start: 1_700_000_002_000, tokens: 20, requests: 2 },
    ]);
    for (const b of buckets) expect(b.start % ledger.bucketMs).toBe(0);
  });

  it('lists only its own usage, and nothing once it slid out', () => {
    const clock = new FakeClock();
    const ledger = slidingLedger(clock);
    ledger.spend(5, 1);
    clock.advance(62_000);
    expect(ledger.ownBuckets()).toEqual([]);
    expect(ledger.localUsage().tokens).toBe(0);
  });

  it('tells when usage will have slid out far enough', () => {
    const clock = new FakeClock(1_700_000_000_000);
    const w = sliding(clock);
    w.add(600);
    clock.advance(30_000);
    w.add(300);
    // At most 400: the first charge must leave, after the window (60 s) and its bucket.
    expect(w.timeUntil(400, Infinity, clock.ms)).toBe(31_000);
    expect(w.timeUntil(900, Infinity, clock.ms)).toBe(0);
    expect(w.timeUntil(0, Infinity, clock.ms)).toBe(61_000);
    expect(w.timeUntil(-1, Infinity, clock.ms)).toBe(Infinity);
    clock.advance(31_000);
    expect(w.at(clock.ms)).toBe(300);
  });

  it('tells when the newest sixth of the window has room for another request', () => {
    const clock = new FakeClock(1_700_000_000_000);
    const w = sliding(clock);
    for (let i = 0; i < 10; i++) w.add(1);
    expect(w.recentAt(clock.ms)).toBe(10);
    const wait = w.timeUntil(Infinity, 9, clock.ms);
    expect(wait).toBe(11_000);
    clock.advance(wait - 1);
    expect(w.recentAt(clock.ms)).toBe(10);
    clock.advance(1);
    expect(w.recentAt(clock.ms)).toBe(0);
    expect(w.at(clock.ms)).toBe(10);
  });

  it('keeps usage until reset() in the fixed kind', () => {
    const clock = new FakeClock();
    const ledger = new QuotaLedger({}, clock.now);
    ledger.spend(100, 1);
    clock.advance(3_600_000);
    expect(ledger.localUsage()).toEqual({ tokens: 100, requests: 1 });
    expect(ledger.tokens.window.timeUntil(0, Infinity, clock.ms)).toBe(Infinity);
    expect(ledger.ownBuckets()).toEqual([{ start: 0, tokens: 100, requests: 1 }]);
    ledger.spend(-500, -5);
    expect(ledger.localUsage()).toEqual({ tokens: 0, requests: 0 });
    ledger.spend(1, 1);
    ledger.reset();
    expect(ledger.localUsage().tokens).toBe(0);
  });

  it('keeps what was counted when it switches kinds', () => {
    const clock = new FakeClock();
    const w = new WindowCount(clock.now);
    w.add(100);
    w.configure('sliding', 60_000);
    expect(w.windowKind).toBe('sliding');
    expect(w.at(clock.ms)).toBe(100);
    expect(w.windowMs).toBe(60_000);
    w.configure('fixed');
    expect(w.windowKind).toBe('fixed');
    expect(w.windowMs).toBe(0);
  });

  it('survives a clock that goes back', () => {
    const clock = new FakeClock();
    const w = sliding(clock);
    w.add(10);
    clock.advance(-5_000);
    w.add(10);
    expect(w.at(clock.ms)).toBe(20);
    clock.advance(70_000);
    expect(w.at(clock.ms)).toBe(0);
  });
});

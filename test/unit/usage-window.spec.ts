import { UsageWindow } from '../../src/quota/usage-window';
import { FakeClock } from '../support/random';

describe('UsageWindow', () => {
  const sliding = (clock: FakeClock, windowMs = 60_000, buckets = 60) => {
    const w = new UsageWindow(clock.now);
    w.configure('sliding', windowMs, buckets);
    return w;
  };

  it('starts every bucket at a multiple of bucketMs, whatever the clock said at configure()', () => {
    const clock = new FakeClock(1_700_000_000_123);
    const w = sliding(clock);
    expect(w.bucketMs).toBe(1000);
    w.add(10, 1);
    clock.advance(2_500);
    w.add(20, 2);
    const buckets = [...w.ownBuckets()];
    expect(buckets).toEqual([
      { start: 1_700_000_000_000, tokens: 10, requests: 1 },
      { start: 1_700_000_002_000, tokens: 20, requests: 2 },
    ]);
    for (const b of buckets) expect(b.start % w.bucketMs).toBe(0);
  });

  it('lists only its own usage, and nothing once it slid out', () => {
    const clock = new FakeClock();
    const w = sliding(clock);
    w.add(5, 1);
    clock.advance(62_000);
    expect([...w.ownBuckets()]).toEqual([]);
    expect(w.tokens).toBe(0);
  });

  it('tells when usage will have slid out far enough', () => {
    const clock = new FakeClock(1_700_000_000_000);
    const w = sliding(clock);
    w.add(600, 1);
    clock.advance(30_000);
    w.add(300, 1);
    // At most 400 tokens: the first charge must leave, after the window (60 s) and its bucket.
    expect(w.timeUntil(400, Infinity)).toBe(31_000);
    expect(w.timeUntil(900, Infinity)).toBe(0);
    expect(w.timeUntil(0, Infinity)).toBe(61_000);
    expect(w.timeUntil(-1, Infinity)).toBe(Infinity);
    clock.advance(31_000);
    expect(w.tokens).toBe(300);
  });

  it('tells when the newest sixth of the window has room for another request', () => {
    const clock = new FakeClock(1_700_000_000_000);
    const w = sliding(clock);
    for (let i = 0; i < 10; i++) w.add(0, 1);
    expect(w.recentRequests).toBe(10);
    const wait = w.timeUntil(Infinity, Infinity, 9);
    expect(wait).toBe(11_000);
    clock.advance(wait - 1);
    expect(w.recentRequests).toBe(10);
    clock.advance(1);
    expect(w.recentRequests).toBe(0);
    expect(w.requests).toBe(10);
  });

  it('keeps usage until reset() in the fixed kind', () => {
    const clock = new FakeClock();
    const w = new UsageWindow(clock.now);
    w.add(100, 1);
    clock.advance(3_600_000);
    expect(w.tokens).toBe(100);
    expect(w.timeUntil(0, 0)).toBe(Infinity);
    expect([...w.ownBuckets()]).toEqual([{ start: 0, tokens: 100, requests: 1 }]);
    w.add(-500, -5);
    expect(w.tokens).toBe(0);
    expect(w.requests).toBe(0);
    w.add(1, 1);
    w.reset();
    expect(w.tokens).toBe(0);
  });

  it('keeps what was counted when it switches kinds', () => {
    const clock = new FakeClock();
    const w = new UsageWindow(clock.now);
    w.add(100, 2);
    w.configure('sliding', 60_000);
    expect(w.windowKind).toBe('sliding');
    expect(w.tokens).toBe(100);
    expect(w.windowMs).toBe(60_000);
    w.configure('fixed');
    expect(w.windowKind).toBe('fixed');
    expect(w.windowMs).toBe(0);
  });

  it('survives a clock that goes back', () => {
    const clock = new FakeClock();
    const w = sliding(clock);
    w.add(10, 1);
    clock.advance(-5_000);
    w.add(10, 1);
    expect(w.tokens).toBe(20);
    clock.advance(70_000);
    expect(w.tokens).toBe(0);
  });
});

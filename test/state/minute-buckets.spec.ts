import { BUCKET_MS, MinuteBuckets, WINDOW_BUCKETS } from '../../src/state/minute-buckets';
import { LocalTenantCounts } from '../../src/state/tenant-counts';
import { seeded } from '../support/random';

/** The window as a list of what was added where: the sum of the 61 newest buckets, read plainly. */
class Reference {
  private readonly amounts = new Map<number, number>();
  private newest = -Infinity;

  slide(bucket: number): number {
    if (bucket > this.newest) this.newest = bucket;
    let sum = 0;
    // The newest bucket only moves on: one that left the window never comes back into it.
    for (const [n, v] of this.amounts) {
      if (this.holds(n)) sum += v;
      else this.amounts.delete(n);
    }
    return sum;
  }

  add(bucket: number, amount: number): void {
    if (!this.holds(bucket)) return;
    this.amounts.set(bucket, Math.max(0, (this.amounts.get(bucket) ?? 0) + amount));
  }

  private holds(n: number): boolean {
    return n <= this.newest && n > this.newest - WINDOW_BUCKETS;
  }
}

describe('MinuteBuckets', () => {
  it('holds the 61 newest buckets: an amount leaves the window 61 buckets after it came', () => {
    const w = new MinuteBuckets();
    expect(w.slide(1_000)).toBe(0);
    w.add(1_000, 500);
    w.add(1_000, 20);
    expect(w.slide(1_030)).toBe(520);
    w.add(1_030, 7);
    expect(w.slide(1_060)).toBe(527);
    expect(w.slide(1_061)).toBe(7);
    // Far ahead: everything left.
    expect(w.slide(5_000)).toBe(0);
  });

  it('gives back no more than a bucket holds, and nothing to a bucket that left the window', () => {
    const w = new MinuteBuckets();
    w.slide(10);
    w.add(10, 100);
    w.add(10, -250);
    expect(w.slide(10)).toBe(0);
    w.add(10, 40);
    w.slide(71);
    w.add(10, 1_000); // bucket 10 left the window at 71
    expect(w.slide(71)).toBe(0);
    expect(w.holds(11)).toBe(true);
    expect(w.holds(10)).toBe(false);
  });

  it('counts what is taken after the clock went back past the window', () => {
    const w = new MinuteBuckets();
    w.slide(1_000);
    w.add(1_000, 10);
    // The clock is two minutes behind: the window stays where it was, and the take counts.
    expect(w.slide(880)).toBe(10);
    w.take(880, 5);
    expect(w.slide(880)).toBe(15);
    // It leaves with the window's oldest bucket, before the first one.
    expect(w.slide(1_000)).toBe(15);
    expect(w.slide(1_001)).toBe(10);
  });

  it('says how long until enough leaves the window, oldest first', () => {
    const w = new MinuteBuckets();
    w.slide(100);
    w.add(100, 30);
    w.slide(120);
    w.add(120, 50);
    const now = 130 * BUCKET_MS + 400;
    w.slide(130);
    // 30 leaves when bucket 100 does (at bucket 161), 80 when bucket 120 does.
    expect(w.waitToFree(30, now)).toBe(161 * BUCKET_MS - now);
    expect(w.waitToFree(31, now)).toBe(181 * BUCKET_MS - now);
    // More than it holds: until the current bucket leaves.
    expect(w.waitToFree(81, now)).toBe(191 * BUCKET_MS - now);
  });

  it('agrees with a plain list of what was added, over 20 000 random steps', () => {
    const random = seeded(44);
    const w = new MinuteBuckets();
    const ref = new Reference();
    let bucket = 1_700_000_000;
    const steps: Array<[number, number, number]> = [];
    for (let k = 0; k < 20_000; k++) {
      const r = random();
      if (r < 0.3) bucket += Math.floor(random() * (r < 0.02 ? 120 : 4));
      const at = bucket - Math.floor(random() * 70);
      const amount = Math.floor(random() * 200) - (random() < 0.2 ? 300 : 0);
      if (random() < 0.5) {
        w.add(at, amount);
        ref.add(at, amount);
      }
      const [got, want] = [w.slide(bucket), ref.slide(bucket)];
      if (got !== want) steps.push([k, got, want]);
    }
    expect(steps).toEqual([]);
  });
});

describe('LocalTenantCounts over its minute', () => {
  it('refuses past tpm until the charge that filled it leaves the window, then takes again', () => {
    const counts = new LocalTenantCounts();
    const limits = { tpm: 1_000 };
    const t0 = 1_700_000_000_000;
    expect(counts.take('acme', limits, { tokens: 600, requests: 1, usd: 0 }, t0)).toEqual({
      ok: true,
      at: t0,
    });
    const later = t0 + 20_000;
    expect(counts.take('acme', limits, { tokens: 300, requests: 1, usd: 0 }, later).ok).toBe(true);
    const refused = counts.take('acme', limits, { tokens: 200, requests: 1, usd: 0 }, later + 1);
    expect(refused).toMatchObject({ ok: false, limit: 'tpm', used: 900, value: 1_000 });
    // 100 must leave: the first charge's bucket leaves the window 61 s after it came.
    const bucket = Math.floor(t0 / BUCKET_MS);
    expect(refused.ok || refused.waitMs).toBe((bucket + WINDOW_BUCKETS) * BUCKET_MS - (later + 1));
    // Its answer gives 500 back: now the call fits.
    counts.adjust('acme', { tokens: -500, requests: 0, usd: 0 }, t0, limits);
    expect(counts.take('acme', limits, { tokens: 200, requests: 1, usd: 0 }, later + 2).ok).toBe(
      true,
    );
    expect(counts.used('acme', later + 2).tokens).toBe(600);
    expect(counts.used('acme', t0 + 61_000).tokens).toBe(500);
  });
});

describe('LocalTenantCounts when the clock goes back', () => {
  it('still counts a take two minutes behind the newest one against tpm', () => {
    const counts = new LocalTenantCounts();
    const limits = { tpm: 1_000 };
    const t0 = 1_700_000_000_000;
    expect(counts.take('acme', limits, { tokens: 600, requests: 1, usd: 0 }, t0).ok).toBe(true);
    const back = t0 - 120_000;
    expect(counts.take('acme', limits, { tokens: 300, requests: 1, usd: 0 }, back).ok).toBe(true);
    expect(
      counts.take('acme', limits, { tokens: 200, requests: 1, usd: 0 }, back + 1),
    ).toMatchObject({ ok: false, limit: 'tpm', used: 900 });
  });
});

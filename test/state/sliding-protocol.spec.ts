import {
  decodeReading,
  decodeUsage,
  encodeReading,
  encodeUsage,
  publishBuckets,
  sumOthers,
  type PublishedUsage,
} from '../../src/state/redis/redis-protocol';
import { checkPeers } from '../../src/state/redis/peer-checks';
import { QuotaLedger } from '../../src/quota/quota-ledger';
import { ModelState } from '../../src/registry/model-state';

const MINUTE = 60_000;
/** An epoch-aligned minute boundary, far from 0 like real clocks. */
const T0 = 1_700_000_040_000;

describe('publishing own buckets', () => {
  it('merges epoch-aligned buckets of one window into fewer, still aligned', () => {
    const w = new QuotaLedger({}, () => now);
    let now = T0 + 250;
    w.slide(MINUTE); // 120 buckets of 500 ms
    w.spend(10, 1);
    now = T0 + 700;
    w.spend(5, 1);
    now = T0 + 1_200;
    w.spend(7, 1);
    w.spend(-2); // a refund comes off the newest bucket
    const s = T0 / 1000;
    expect(publishBuckets(w.ownBuckets(), w.bucketMs, 2)).toEqual([s, 15, 2, s + 1, 5, 1]);
    expect(publishBuckets(w.ownBuckets(), w.bucketMs, 1)).toEqual([
      2 * s,
      10,
      1,
      2 * s + 1,
      5,
      1,
      2 * s + 2,
      5,
      1,
    ]);
  });

  it('publishes a fixed window as one bucket that never ages', () => {
    const w = new QuotaLedger({}, () => T0);
    w.spend(40, 2);
    expect(publishBuckets(w.ownBuckets(), w.bucketMs)).toEqual([0, 40, 2]);
    w.reset();
    expect(publishBuckets(w.ownBuckets(), w.bucketMs)).toEqual([]);
  });
});

describe('published usage', () => {
  const usage = (at: number, models: PublishedUsage['models']): PublishedUsage => ({
    at,
    bucketMs: 1000,
    models,
  });

  it('round-trips, and ignores what it cannot read', () => {
    const u = usage(T0, { 'east:gpt-4o': [T0 / 1000, 120, 2] });
    expect(decodeUsage(encodeUsage(u))).toEqual(u);
    expect(encodeUsage(u).startsWith(`${T0} `)).toBe(true); // the script reads the time there
    for (const bad of ['', '12', '12 {', '12 {"m":{}}', '12 []', 'x {"b":1,"m":null}']) {
      expect(decodeUsage(bad)).toBeUndefined();
    }
  });

  it("carries each model's last answer reading, and picks the newest of the others'", () => {
    const reading = {
      sentAt: T0 + 100,
      at: T0 + 180,
      tokens: 250,
      tokensEnd: T0 + 30_000,
      requestsEnd: 0,
      reading: { tokens: { limit: 10_000, remaining: 4_000 }, requests: { remaining: 7 } },
    };
    const a = { ...usage(T0, {}), readings: { 'east:gpt-4o': encodeReading(reading) } };
    expect(decodeUsage(encodeUsage(a))).toEqual(a);
    expect(decodeReading(encodeReading(reading))).toEqual(reading);
    const later = { ...reading, sentAt: T0 + 900, at: T0 + 950 };
    const b = { ...usage(T0, {}), readings: { 'east:gpt-4o': encodeReading(later) } };
    const old = usage(T0, {}); // an instance of a version that shares no readings
    // As a sync reads them: the newest reading of the others, its limits not learned from a peer.
    const models = new Map(
      ['east', 'west'].map((deployment) => [
        `${deployment}:gpt-4o`,
        { deployment, model: 'gpt-4o', tokens: 10_000, requests: 100, input: 0, output: 0 },
      ]),
    );
    const bounds = {
      now: T0 + 1_000,
      windowMs: MINUTE,
      skewMs: 5_000,
      maxCooldown: MINUTE,
      models,
    };
    const { report } = checkPeers(
      { usage: [a, old, b].map(encodeUsage), cooling: [], skipped: [] },
      bounds,
    );
    expect(report.models.get('east')?.get('gpt-4o')?.reading).toEqual({
      ...later,
      reading: { tokens: { remaining: 4_000 }, requests: { remaining: 7 } },
    });
    expect(report.models.get('west')?.get('gpt-4o')?.reading).toBeUndefined();
    for (const bad of [[1, 2, 3], 'x', [...encodeReading(reading).slice(1), 'x'], null]) {
      expect(decodeReading(bad)).toBeUndefined();
    }
  });

  it('sums the others over the sliding window that ends now, each overlapping bucket whole', () => {
    const s = T0 / 1000;
    const others = [
      usage(T0, { 'east:m': [s - 61, 1000, 9, s - 60, 100, 1, s, 10, 1], 'west:m': [s, 3, 1] }),
      usage(T0, { 'east:m': [s - 30, 5, 1] }),
    ];
    // Window (T0 - 60 000 + 1, T0 + 1]: bucket s - 61 ended at T0 - 60 000, out; s - 60 overlaps.
    const sums = sumOthers(others, T0 + 1, MINUTE);
    expect(sums.get('east:m')).toMatchObject({ tokens: 115, requests: 3, recentRequests: 1 });
    expect(sums.get('west:m')).toMatchObject({ tokens: 3, requests: 1, recentRequests: 1 });
    // Crossing an aligned minute changes nothing but what slid out.
    expect(sumOthers(others, T0 + 20_000, MINUTE).get('east:m')).toMatchObject({
      tokens: 15,
      requests: 2,
      recentRequests: 0, // the newest sixth (the last 10 s) holds none of them
    });
    expect(sumOthers(others, T0 + 61_000, MINUTE).get('east:m')).toEqual({
      tokens: 0,
      requests: 0,
      recentRequests: 0,
      spans: [],
    });
    // No window: everything counts.
    expect(sumOthers(others, T0 + 10 * MINUTE, 0).get('east:m')!.tokens).toBe(1115);
  });

  it('says when the usage it adds up was sent: the same buckets, oldest first, added across instances', () => {
    const s = T0 / 1000;
    const others = [
      usage(T0, { 'east:m': [s - 30, 5, 1, s, 10, 1] }),
      usage(T0, { 'east:m': [s - 60, 100, 1, s, 7, 2] }),
    ];
    expect(sumOthers(others, T0 + 1, MINUTE).get('east:m')!.spans).toEqual([
      T0 - 60_000,
      T0 - 59_000,
      100,
      1,
      T0 - 30_000,
      T0 - 29_000,
      5,
      1,
      T0,
      T0 + 1_000,
      17,
      3,
    ]);
    // Only what is in the window; without one, send times do not matter.
    expect(sumOthers(others, T0 + 30_000, MINUTE).get('east:m')!.spans).toEqual([
      T0 - 30_000,
      T0 - 29_000,
      5,
      1,
      T0,
      T0 + 1_000,
      17,
      3,
    ]);
    expect(sumOthers(others, T0, 0).get('east:m')!.spans).toEqual([]);
  });
});

describe("the others' recent requests", () => {
  it('weigh against rpm / 6 as the own ones do', () => {
    let now = T0;
    const state = new ModelState({ name: 'm', tpm: 100_000, rpm: 60 }, 'east', () => now);
    state.quota.slide(MINUTE);
    state.spend(10, 1);
    state.quota.shared = { tokens: 0, requests: 9, recentRequests: 8 };
    expect(state.util).toBeCloseTo(0.9); // 1 + 8 of 10 per 10 s; the minute holds 10 of 60
    state.quota.shared.recentRequests = 9;
    expect(state.isHealthy()).toBe(false);
    now += 15_000; // the own request left the newest sixth; the others' count is the store's
    expect(state.util).toBeCloseTo(0.9);
  });
});

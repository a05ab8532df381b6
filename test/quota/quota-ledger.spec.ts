import { QuotaLedger } from '../../src/quota/quota-ledger';
import { QuotaLimit } from '../../src/quota/quota-limit';
import { ModelState } from '../../src/registry/model-state';
import { FakeClock } from '../support/random';

const headers = (h: Record<string, number>) =>
  new Headers(Object.fromEntries(Object.entries(h).map(([k, v]) => [k, String(v)])));

/** A fake clock that counts how often it is read. */
class CountingClock extends FakeClock {
  reads = 0;
  readonly read = (): number => {
    this.reads++;
    return this.ms;
  };
  /** Reads of the clock while `fn` runs. */
  during(fn: () => unknown): number {
    const before = this.reads;
    fn();
    return this.reads - before;
  }
}

const call = { input: 300, output: 100 };
const foundry = headers({
  'anthropic-ratelimit-requests-remaining': 50,
  'anthropic-ratelimit-tokens-remaining': 9_000,
  'anthropic-ratelimit-input-tokens-remaining': 4_000,
  'anthropic-ratelimit-output-tokens-remaining': 1_500,
});

/** A model with every limit, sliding usage, a shared view and a correction: every path taken. */
function busyState(clock: CountingClock): ModelState {
  const s = new ModelState(
    { name: 'c', tpm: 10_000, rpm: 60, itpm: 5_000, otpm: 2_000 },
    'f',
    clock.read,
    { upstream: 'anthropic' },
  );
  s.quota.slide(60_000);
  s.quota.shared = { tokens: 200, requests: 2, recentRequests: 1 };
  s.admit(call);
  s.quota.observe(foundry, call);
  s.settle(call, { input: 280, output: 90 });
  clock.advance(1_000);
  return s;
}

describe('QuotaLedger', () => {
  it('reads the clock once per operation, however many limits and windows it weighs', () => {
    const clock = new CountingClock();
    const s = busyState(clock);
    const ledger = s.quota;
    expect(clock.during(() => ledger.hasRoom(call))).toBe(1);
    expect(clock.during(() => ledger.util())).toBe(1);
    expect(clock.during(() => ledger.anchoredUsage())).toBe(1);
    expect(clock.during(() => ledger.admit(call))).toBe(1);
    expect(clock.during(() => ledger.settle(call, { input: 310, output: 120 }))).toBe(1);
    expect(clock.during(() => ledger.admit(call))).toBe(1);
    expect(clock.during(() => ledger.release(call))).toBe(1);
    expect(clock.during(() => ledger.observe(foundry))).toBe(1);
    // No room for this one: the wait is worked out on every limit, still on one reading.
    const big = { input: 4_900, output: 1_950 };
    expect(ledger.hasRoom(big)).toBe(false);
    expect(clock.during(() => ledger.roomAt(big))).toBe(1);
    // An answer without rate-limit headers costs no clock read at all.
    expect(clock.during(() => ledger.observe(new Headers()))).toBe(0);
    // With the caller's reading passed in, none.
    const now = clock.ms;
    expect(clock.during(() => ledger.hasRoom(call, now))).toBe(0);
    expect(clock.during(() => ledger.util(now))).toBe(0);
    expect(clock.during(() => ledger.roomAt(big, now))).toBe(0);
  });

  it('keeps ModelState to one clock read per question, cooldown included', () => {
    const clock = new CountingClock();
    const s = busyState(clock);
    s.markDown(5_000, 'rate_limit');
    for (const cooling of [true, false]) {
      expect(clock.during(() => s.hasRoom(call))).toBe(1);
      expect(clock.during(() => s.util)).toBe(1);
      expect(clock.during(() => s.roomAt(call))).toBe(1);
      expect(clock.during(() => s.blockedBy(call))).toBe(1);
      expect(clock.during(() => s.cooldownRemaining)).toBe(1);
      expect(s.isCooling()).toBe(cooling);
      clock.advance(5_000);
    }
    expect(clock.during(() => s.admit(call))).toBe(1);
    expect(clock.during(() => s.settle(call, { input: 1, output: 1 }))).toBe(1);
  });

  it('answers at the instant it is given: usage slid out by then no longer counts', () => {
    const clock = new FakeClock();
    const ledger = new QuotaLedger({ tpm: 1_000 }, clock.now);
    ledger.slide(60_000);
    ledger.admit({ input: 900, output: 0 });
    expect(ledger.hasRoom({ input: 200, output: 0 })).toBe(false);
    expect(ledger.hasRoom({ input: 200, output: 0 }, clock.ms + 61_000)).toBe(true);
    expect(ledger.util(clock.ms + 61_000)).toBe(0);
  });

  it('weighs the requests of the newest sixth against rpm / 6, following a learned rpm', () => {
    const clock = new FakeClock();
    const limits: string[] = [];
    const ledger = new QuotaLedger({}, clock.now, {
      upstream: 'azure',
      onLimit: (limit, value, was, configured) =>
        limits.push(`${limit} ${was}->${value}${configured ? ' configured' : ''}`),
    });
    ledger.slide(60_000);
    expect(ledger.burst.limit).toBe(1);
    ledger.observe(
      // Azure's requests header speaks of its 10 s window: 20 there is 120 a minute.
      headers({ 'x-ratelimit-limit-requests': 20, 'x-ratelimit-remaining-requests': 20 }),
    );
    expect(limits).toEqual(['rpm 0->120']);
    expect(ledger.limits.rpm.learned).toBe(true);
    expect(ledger.burst.limit).toBe(20);
    const one = { input: 0, output: 0 };
    for (let i = 0; i < 19; i++) ledger.admit(one);
    expect(ledger.hasRoom(one)).toBe(true);
    ledger.admit(one);
    // 20 of 120 a minute is a sixth of the minute, but all of the newest sixth's 20.
    expect(ledger.hasRoom(one)).toBe(false);
    expect(ledger.util()).toBe(1);
    expect(ledger.roomAt(one)).toBeGreaterThan(0);
  });

  it('settles as the upstream reconciles and returns the tokens it charged', () => {
    const clock = new FakeClock();
    const reserve = new QuotaLedger({ tpm: 10_000 }, clock.now);
    reserve.admit({ input: 100, output: 500 });
    // Azure keeps the output cap charged: only the prompt estimate is corrected.
    expect(reserve.settle({ input: 100, output: 500 }, { input: 120, output: 40 })).toBe(20);
    expect(reserve.tokensAt(clock.ms)).toBe(620);
    const actual = new QuotaLedger({ tpm: 10_000 }, clock.now, { upstream: 'anthropic' });
    actual.admit({ input: 100, output: 500 });
    expect(actual.settle({ input: 100, output: 500 }, { input: 120, output: 40 })).toBe(-440);
    expect(actual.tokensAt(clock.ms)).toBe(160);
    expect(actual.release({ input: 0, output: 0 })).toBe(0);
  });
});

describe('QuotaLedger shares', () => {
  it('has util as the largest share, whichever limit binds', () => {
    const clock = new FakeClock();
    const ledger = new QuotaLedger({ tpm: 10_000, rpm: 60, itpm: 2_000, otpm: 1_000 }, clock.now, {
      upstream: 'anthropic',
    });
    ledger.slide(60_000);
    const check = () => {
      const shares = ledger.shares();
      expect(ledger.util()).toBeCloseTo(Math.max(...Object.values(shares)), 9);
      return shares;
    };
    expect(check()).toEqual({ tpm: 0, rpm: 0, itpm: 0, otpm: 0 });
    ledger.admit({ input: 500, output: 100 });
    // One request of the bucket of 60; the ramp's first step (a second's share and one) holds
    // back a third, without counting as the upstream's load.
    expect(check()).toMatchObject({ tpm: 0.06, rpm: 1 / 60, itpm: 0.25, otpm: 0.1 });
    expect(ledger.hasRoom({ input: 0, output: 0 })).toBe(true);
    ledger.admit({ input: 0, output: 0 });
    expect(ledger.hasRoom({ input: 0, output: 0 })).toBe(false);
    ledger.settle({ input: 0, output: 0 }, { input: 0, output: 0 });
    expect(ledger.recent()).toEqual({ used: 2, limit: 2 });
    clock.advance(15_000);
    // The ramp's bucket refilled; both requests are still in the minute.
    expect(check().rpm).toBeCloseTo(2 / 60, 9);
    ledger.settle({ input: 500, output: 100 }, { input: 500, output: 100 });
    // Rounded to the nearest thousand by Anthropic: taken as 500 less, 200 left.
    ledger.observe(headers({ 'anthropic-ratelimit-input-tokens-remaining': 700 }));
    expect(check().itpm).toBeCloseTo(0.9, 9);
    ledger.observe(headers({ 'anthropic-ratelimit-input-tokens-remaining': 2_000 }));
    // The upstream counts less than we do: ours comes down to its count, on the safe side of
    // its rounding (2 000 left may be 1 500).
    expect(check().itpm).toBe(0.25);
    const fixed = new QuotaLedger({ rpm: 60 }, clock.now);
    expect(fixed.recent()).toBeUndefined();
  });

  it('keeps a configured limit the headers confirm as configured, not learned', () => {
    const confirmed = new QuotaLimit('tpm', 10_000);
    expect(confirmed.learn(10_000)).toBeUndefined();
    expect(confirmed.learned).toBe(false);
    expect(confirmed.learn(8_000)).toBe(10_000);
    expect(confirmed.learned).toBe(true);
    const unconfigured = new QuotaLimit('rpm', undefined);
    expect(unconfigured.learn(300)).toBe(0);
    expect(unconfigured.learned).toBe(true);
    expect(unconfigured.learn(0)).toBeUndefined();
    expect(unconfigured.value).toBe(300);
  });
});

describe('the tokens counter anchoring on a header', () => {
  it('leaves the calls still in flight out of the comparison, and records what was left', () => {
    const clock = new FakeClock();
    const ledger = new QuotaLedger({ tpm: 10_000 }, clock.now, { upstream: 'azure' });
    const tokens = ledger.tokens;
    const first = { input: 1_000, output: 0 };
    const later = { input: 2_000, output: 0 };
    const reading = (own: typeof first | undefined) => ({
      now: clock.ms,
      sentAt: clock.ms,
      own,
      peer: undefined,
      paceOk: true,
    });
    ledger.admit(first);
    ledger.admit(later);
    // Written for `first`: the upstream counts 1000 more than our 1000 sent before `later`.
    tokens.anchor({ remaining: 8_000 }, reading(first));
    expect(ledger.tokens.correction.at(clock.ms, 60_000)).toBeCloseTo(1_000);
    expect(ledger.upstreamRemaining.tpm).toEqual({ remaining: 8_000, at: clock.ms });
    tokens.answered(first);
    tokens.answered(later);
    tokens.answered(later); // once too often: nothing goes below zero
    tokens.anchor({ remaining: 7_000 }, reading(undefined));
    expect(ledger.tokens.correction.at(clock.ms, 60_000)).toBeCloseTo(0);
  });

  it('corrects no limit it does not know (an unlimited one stays unlimited)', () => {
    const clock = new FakeClock();
    const ledger = new QuotaLedger({}, clock.now);
    ledger.observe(headers({ 'x-ratelimit-remaining-tokens': 10 }));
    expect(ledger.limits.tpm.value).toBe(0);
    expect(ledger.tokens.correction.at(clock.ms, 60_000)).toBe(0);
    expect(ledger.upstreamRemaining).toEqual({});
    expect(ledger.limits.tpm).toBeInstanceOf(QuotaLimit);
  });
});

describe('the ledger at a given instant', () => {
  it('agrees with its own reading of the clock, and reads none when given the instant', () => {
    const clock = new CountingClock();
    const ledger = new QuotaLedger({ rpm: 600 }, clock.read);
    ledger.slide(60_000, 60);
    ledger.spend(100, 1);
    clock.advance(55_000);
    ledger.spend(50, 2);
    const at = clock.ms + 7_000; // the first bucket has slid out by then
    const reads = clock.reads;
    expect([ledger.tokensAt(at), ledger.requestsAt(at), ledger.recent(at)?.used]).toEqual([
      50, 2, 2,
    ]);
    expect(ledger.localUsage(at)).toEqual({ tokens: 50, requests: 2 });
    expect(clock.reads).toBe(reads);
    clock.ms = at;
    expect(ledger.localUsage()).toEqual({ tokens: 50, requests: 2 });
    expect(ledger.recent()?.used).toBe(2);
  });
});

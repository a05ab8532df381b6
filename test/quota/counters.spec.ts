import { BurstCounter } from '../../src/quota/burst-counter';
import { WindowCount } from '../../src/quota/window-count';
import { fits, type Anchoring, type CounterScope } from '../../src/quota/limit-counter';
import { InputCounter } from '../../src/quota/input-counter';
import { QuotaLedger } from '../../src/quota/quota-ledger';
import { QuotaLimit, type LimitName } from '../../src/quota/quota-limit';
import { readRateLimits, readResetBound } from '../../src/quota/rate-limit-headers';
import { SendOrder } from '../../src/quota/send-order';
import type { SharedReading } from '../../src/quota/reading';
import { RequestsCounter } from '../../src/quota/requests-counter';
import { TokensCounter } from '../../src/quota/tokens-counter';
import { WindowEnd } from '../../src/quota/window-end';
import { FakeClock, seeded } from '../support/random';

const T0 = 1_700_000_040_000;
const call = (input: number, output = 0) => ({ input, output });

/** A scope as a ledger keeps it, with the limits it was told were learned. */
function scope(span = 60_000): CounterScope & { learnedLimits: string[] } {
  const learnedLimits: string[] = [];
  return {
    span,
    peers: undefined,
    reported: {},
    learnedLimits,
    learned(limit, value) {
      if (limit.learn(value) !== undefined) learnedLimits.push(`${limit.name} ${value}`);
    },
  };
}

/** A ledger's tokens and requests windows, sliding over `span`. */
function sliding(clock: FakeClock, span = 60_000): { tokens: WindowCount; requests: WindowCount } {
  const tokens = new WindowCount(clock.now);
  const requests = new WindowCount(clock.now, true);
  tokens.configure('sliding', span);
  requests.configure('sliding', span);
  return { tokens, requests };
}

const ours = (now: number, own?: { input: number; output: number }, sentAt = now): Anchoring => ({
  now,
  sentAt,
  own,
  peer: undefined,
  paceOk: true,
});

describe('TokensCounter, RequestsCounter', () => {
  it('anchors on the upstream count: holds what others used until the window ends', () => {
    const clock = new FakeClock(T0);
    const usage = sliding(clock);
    const s = scope();
    const tokens = new TokensCounter(new QuotaLimit('tpm', 10_000), usage.tokens, s);
    tokens.admit(call(1_000), clock.ms);
    tokens.anchor(
      { remaining: 7_000, reset: { ms: 30_000, grain: 1_000 } },
      ours(clock.ms, call(1_000)),
    );
    tokens.answered(call(1_000));
    expect(tokens.used(clock.ms)).toBeCloseTo(3_000);
    expect(fits(tokens, call(7_000), clock.ms)).toBe(true);
    expect(fits(tokens, call(7_001), clock.ms)).toBe(false);
    expect(tokens.wait(call(7_001), clock.ms)).toBe(30_000);
    expect(s.reported.tpm).toEqual({ remaining: 7_000, at: T0 });
    clock.advance(30_000);
    tokens.catchUp(clock.ms);
    // The upstream's window ended: its count and ours of it are gone; the others' pace goes on.
    expect(tokens.counted(clock.ms)).toBe(0);
    expect(tokens.used(clock.ms)).toBe(0);
    expect(tokens.share(clock.ms)).toBeGreaterThan(0);
  });

  it('rolls with coarse resets on the tightest end, keeping what was sent into the next window', () => {
    const clock = new FakeClock(T0);
    const usage = sliding(clock, 3_000);
    const tokens = new TokensCounter(new QuotaLimit('tpm', 10_000), usage.tokens, scope(3_000));
    const send = (n: number) => {
      tokens.admit(call(n), clock.ms);
      return clock.ms;
    };
    const answer = (n: number, sentAt: number, used: number, resetS: number) => {
      tokens.anchor(
        { remaining: 10_000 - used, reset: { ms: resetS * 1000, grain: 1000 } },
        ours(clock.ms, call(n), sentAt),
      );
      tokens.answered(call(n));
    };
    // The upstream's window truly ends at T0 + 2 400. "3" at T0: the end is (T0 + 2 000, T0 + 3 000].
    answer(100, send(100), 100, 3);
    expect([tokens.end.low, tokens.end.high]).toEqual([T0 + 2_000, T0 + 3_000]);
    clock.ms = T0 + 1_500; // 0.9 s left, "1": (T0 + 1 500, T0 + 2 500]: the tightest bound wins
    answer(100, send(100), 200, 1);
    expect([tokens.end.low, tokens.end.high]).toEqual([T0 + 2_000, T0 + 2_500]);
    clock.ms = T0 + 2_450; // sent into the next window, answered 20 ms later
    const next = send(300);
    clock.ms = T0 + 2_470;
    answer(300, next, 300, 3);
    // Its "3" is of a later window: the held one ended, what was sent before its end is forgotten.
    expect(tokens.counted(clock.ms)).toBe(300);
    expect(tokens.rolledAt).toBe(T0 + 2_500);
    // Before, the end held was T0 + 3 000 after the first answer: the call sent at T0 + 2 450
    // would have been forgotten at T0 + 3 000 with the rest, and the next window overfilled.
  });

  it('never forgets a call in flight when the window ends', () => {
    const clock = new FakeClock(T0);
    const usage = sliding(clock);
    const tokens = new TokensCounter(new QuotaLimit('tpm', 10_000), usage.tokens, scope());
    tokens.admit(call(4_000), clock.ms);
    tokens.anchor({ remaining: 6_000, reset: { ms: 1_000, grain: 1_000 } }, ours(clock.ms));
    clock.advance(1_000);
    tokens.catchUp(clock.ms);
    expect(tokens.counted(clock.ms)).toBe(4_000);
  });

  it("counts the peers' usage the upstream does not hold yet, by when it was sent", () => {
    const clock = new FakeClock(T0);
    const usage = sliding(clock);
    const s = scope();
    const requests = new RequestsCounter(new QuotaLimit('rpm', 100), usage.requests, s);
    s.peers = {
      tokens: 0,
      requests: 5,
      spans: [T0 - 2_000, T0 - 1_000, 0, 3, T0, T0 + 1_000, 0, 2],
    };
    // Until an answer is anchored on, all the peers' requests count.
    expect(requests.counted(clock.ms)).toBe(5);
    usage.requests.add(1, clock.ms);
    requests.anchor({ remaining: 95 }, ours(clock.ms + 500, undefined, T0 + 500));
    // The answer to a call sent at T0 + 500 holds what was sent before: half of the last span is after.
    expect(requests.peersCounted()).toBeCloseTo(1);
    expect(requests.total(clock.ms)).toBe(6);
  });

  it("takes a peer's reading for usage only: it never sets or lowers a limit", () => {
    const clock = new FakeClock(T0);
    const limits: string[] = [];
    const ledger = new QuotaLedger({ tpm: 100_000 }, clock.now, {
      upstream: 'azure',
      onLimit: (limit, value) => limits.push(`${limit} ${value}`),
    });
    ledger.slide(60_000);
    ledger.shared = { tokens: 0, requests: 0, spans: [] };
    const forged: SharedReading = {
      sentAt: T0 - 100,
      at: T0 - 50,
      tokens: 0,
      tokensEnd: 0,
      requestsEnd: 0,
      reading: {
        tokens: { limit: 1, remaining: 0 },
        requests: { limit: 1, remaining: 0 },
      },
    };
    expect(ledger.replay(forged)).toBe(true);
    expect(ledger.limits.tpm.value).toBe(100_000);
    expect(ledger.limits.rpm.value).toBe(0);
    expect(limits).toEqual([]);
    // Our own answer's limit headers do teach it.
    clock.advance(1_000);
    ledger.observe(
      new Headers({ 'x-ratelimit-limit-tokens': '80000', 'x-ratelimit-remaining-tokens': '80000' }),
    );
    expect(ledger.limits.tpm.value).toBe(80_000);
    expect(limits).toEqual(['tpm 80000']);
  });
});

describe('WindowCount (the window each counter owns)', () => {
  it('counts what the last window and its newest sixth hold, as a charge-by-charge tally does', () => {
    // 60 buckets of 1 s over a minute: the window keeps the head and the 60 before it, the newest
    // sixth the head and the 10 before it. Gaps from a few ms to several windows.
    const clock = new FakeClock(T0 + 123);
    const w = new WindowCount(clock.now, true);
    w.configure('sliding', 60_000, 60);
    const charges: { bucket: number; amount: number }[] = [];
    const random = seeded(7);
    const gaps = [5, 400, 3_000, 20_000, 59_000, 61_000, 240_000];
    for (let i = 0; i < 600; i++) {
      clock.advance(gaps[Math.floor(random() * gaps.length)]!);
      if (random() < 0.6) {
        const amount = 1 + Math.floor(random() * 100);
        w.add(amount, clock.ms);
        charges.push({ bucket: Math.floor(clock.ms / 1_000), amount });
      }
      const head = Math.floor(clock.ms / 1_000);
      const tally = (from: number) =>
        charges.filter((c) => c.bucket >= from).reduce((sum, c) => sum + c.amount, 0);
      expect(w.at(clock.ms)).toBeCloseTo(tally(head - 60), 6);
      expect(w.recentAt(clock.ms)).toBeCloseTo(tally(head - 10), 6);
    }
  });

  it('is empty a window past its last charge, and counts anew from there', () => {
    const clock = new FakeClock(T0);
    const w = new WindowCount(clock.now, true);
    w.configure('sliding', 60_000);
    w.add(500, clock.ms);
    clock.advance(30_000);
    w.add(200, clock.ms);
    clock.advance(30_000);
    expect(w.at(clock.ms)).toBe(700); // the first charge's bucket is still in the window
    clock.advance(30_600);
    expect(w.at(clock.ms)).toBe(0);
    expect(w.recentAt(clock.ms)).toBe(0);
    expect(w.before(clock.ms, clock.ms)).toBe(0);
    clock.advance(86_400_000); // a day idle
    expect(w.at(clock.ms)).toBe(0);
    w.add(40, clock.ms);
    expect([w.at(clock.ms), w.recentAt(clock.ms), w.timeUntil(0, Infinity, clock.ms)]).toEqual([
      40, 40, 60_400,
    ]);
  });

  it('counts no newest sixth unless asked to, and nothing slides in the fixed kind', () => {
    const clock = new FakeClock(T0);
    const plain = new WindowCount(clock.now);
    plain.configure('sliding', 60_000);
    plain.add(10, clock.ms);
    expect(plain.recentAt(clock.ms)).toBe(0);
    expect(plain.timeUntil(Infinity, 0, clock.ms)).toBe(0);
    const fixed = new WindowCount(clock.now, true);
    fixed.add(10, clock.ms);
    clock.advance(3_600_000);
    expect([fixed.at(clock.ms), fixed.recentAt(clock.ms)]).toEqual([10, 0]);
    expect(fixed.timeUntil(5, Infinity, clock.ms)).toBe(Infinity);
    fixed.add(-50, clock.ms);
    expect(fixed.at(clock.ms)).toBe(0);
  });
});

describe('QuotaLedger: each counter its own window', () => {
  it('charges a call to every window once, and gives back only the tokens', () => {
    const clock = new FakeClock(T0);
    const ledger = new QuotaLedger({ tpm: 10_000, rpm: 60, itpm: 5_000, otpm: 1_000 }, clock.now);
    ledger.slide(60_000);
    const a = call(300, 100);
    ledger.admit(a);
    const counts = () =>
      [ledger.tokens, ledger.requests, ledger.input, ledger.output].map((c) =>
        c.window.at(clock.ms),
      );
    expect(counts()).toEqual([400, 1, 300, 100]);
    expect(ledger.burst.used(clock.ms)).toBe(1); // the newest sixth of the requests' window
    ledger.release(a);
    expect(counts()).toEqual([0, 1, 0, 0]);
    // The stores' view zips the tokens' and the requests' windows bucket by bucket.
    expect(ledger.ownBuckets()).toEqual([
      { start: Math.floor(T0 / 500) * 500, tokens: 0, requests: 1 },
    ]);
    ledger.reset();
    expect(counts()).toEqual([0, 0, 0, 0]);
  });

  it('forgets from the newest sixth too what the minute forgets when it rolls', () => {
    const clock = new FakeClock(T0);
    const ledger = new QuotaLedger({ rpm: 600 }, clock.now);
    ledger.slide(60_000);
    const calls = [1, 2, 3, 4, 5].map(() => call(0));
    for (const c of calls) ledger.admit(c);
    // The upstream's minute ends within a second of when they were sent.
    const headers = { 'x-ratelimit-remaining-requests': '595', 'x-ratelimit-reset-requests': '1' };
    ledger.observe(new Headers(headers), calls[4], clock.ms);
    for (const c of calls) ledger.settle(c, undefined);
    expect(ledger.burst.used(clock.ms)).toBe(5);
    clock.advance(2_000);
    ledger.util(clock.ms); // the upstream's window ended: what was sent into it goes
    expect(ledger.burst.used(clock.ms)).toBe(0);
    ledger.admit(call(0));
    expect(ledger.requests.window.at(clock.ms)).toBe(1);
    expect(ledger.burst.used(clock.ms)).toBe(1);
  });
});

describe('QuotaLedger.util of an idle model', () => {
  it('asks no counter again until a charge, an answer or time can change a share', () => {
    const clock = new FakeClock(T0);
    const ledger = new QuotaLedger({ tpm: 10_000, rpm: 60 }, clock.now);
    ledger.slide(60_000);
    const asked = jest.spyOn(ledger.tokens, 'share');
    ledger.admit(call(2_000));
    expect(ledger.util()).toBeCloseTo(0.2);
    expect(asked).toHaveBeenCalledTimes(1);
    clock.advance(200); // the same bucket: nothing slid out
    expect(ledger.util()).toBeCloseTo(0.2);
    expect(asked).toHaveBeenCalledTimes(1);
    ledger.spend(1_000);
    expect(ledger.util()).toBeCloseTo(0.3);
    clock.advance(61_000); // out of the window: empty from now on
    expect(ledger.util()).toBe(0);
    const after = asked.mock.calls.length;
    clock.advance(86_400_000);
    expect(ledger.util()).toBe(0);
    expect(asked).toHaveBeenCalledTimes(after);
  });

  it('is not kept while a correction fades, nor past the end of the upstream window', () => {
    const clock = new FakeClock(T0);
    const ledger = new QuotaLedger({ tpm: 10_000 }, clock.now, { upstream: 'azure' });
    ledger.slide(60_000);
    const own = call(1_000);
    ledger.admit(own);
    ledger.observe(
      new Headers({ 'x-ratelimit-remaining-tokens': '7000', 'x-ratelimit-reset-tokens': '30' }),
      own,
      clock.ms,
    );
    ledger.settle(own, undefined);
    expect(ledger.util()).toBeCloseTo(0.3); // others' 2 000 held until the window ends
    clock.advance(29_000);
    expect(ledger.util()).toBeCloseTo(0.3); // held, not fading, until the end
    clock.advance(1_600);
    expect(ledger.util()).toBe(0); // the window ended: ours and theirs went with it

    const fixed = new QuotaLedger({ tpm: 10_000 }, clock.now, { upstream: 'azure' });
    fixed.admit(own);
    fixed.observe(new Headers({ 'x-ratelimit-remaining-tokens': '6000' }), own, clock.ms);
    fixed.settle(own, undefined);
    expect(fixed.util()).toBeCloseTo(0.4);
    clock.advance(30_000);
    expect(fixed.util()).toBeCloseTo(0.25); // the 3 000 of others fade over the minute
  });
});

describe('WindowEnd', () => {
  it('keeps the tightest coarse bound, takes the latest fine one, and tells a later window', () => {
    const end = new WindowEnd();
    expect(end.wants(T0)).toBe(true);
    expect(end.take(T0 + 2_000, T0 + 3_000, T0 + 3_020, T0, 750)).toBe(0);
    expect(end.wants(T0)).toBe(false); // nothing new at the same instant
    expect(end.wants(T0 + 1)).toBe(true);
    expect(end.take(T0 + 1_600, T0 + 2_600, T0 + 2_620, T0 + 1, 750)).toBe(0);
    expect([end.low, end.high, end.act]).toEqual([T0 + 2_000, T0 + 2_600, T0 + 2_620]);
    expect(end.due(T0 + 2_619)).toBe(0);
    // A later window's bounds, more than the margin past: the held end is the one that ended.
    expect(end.take(T0 + 4_500, T0 + 5_500, T0 + 5_520, T0 + 2_500, 750)).toBe(T0 + 2_600);
    expect(end.due(T0 + 5_520)).toBe(T0 + 5_500);
    expect(end.known).toBe(false);
    // Fine bounds are not read again for their own sake; the latest of them holds.
    end.take(T0 + 999, T0 + 1_000, T0 + 1_010, T0, 750);
    expect(end.wants(T0 + 5)).toBe(false);
    end.take(T0 + 949, T0 + 950, T0 + 980, T0 + 5, 750);
    expect([end.high, end.act]).toEqual([T0 + 950, T0 + 980]);
  });
});

describe('BurstCounter (Azure requests per 10 s)', () => {
  it('counts the newest sixth against rpm / 6 and anchors on a header of that window', () => {
    const clock = new FakeClock(T0);
    const usage = sliding(clock);
    const s = scope();
    const rpm = new QuotaLimit('rpm', 60);
    const burst = new BurstCounter(rpm, usage.requests, s, new SendOrder('requests'));
    expect(burst.limit).toBe(10);
    expect(burst.active).toBe(true);
    for (let i = 0; i < 9; i++) usage.requests.add(1, clock.ms);
    expect(fits(burst, call(1), clock.ms)).toBe(true);
    usage.requests.add(1, clock.ms);
    expect(fits(burst, call(1), clock.ms)).toBe(false);
    expect(burst.share(clock.ms)).toBe(1);
    expect(burst.wait(call(1), clock.ms)).toBeGreaterThan(9_000);
    expect(burst.claims({ limit: 10, remaining: 3 })).toBe(true);
    expect(burst.claims({ limit: 60, remaining: 3 })).toBe(false);
    // The upstream counts 2 more in its 10 s window than our 10 (someone else's).
    burst.anchor({ limit: 10, remaining: 0 }, ours(clock.ms));
    clock.advance(10_500);
    expect(burst.used(clock.ms)).toBe(0);
    expect(
      new BurstCounter(new QuotaLimit('rpm', 0), usage.requests, s, new SendOrder('requests'))
        .active,
    ).toBe(false);
  });
});

describe('InputCounter, OutputCounter', () => {
  it('trims its own excess oldest first and holds a fading correction for others', () => {
    const clock = new FakeClock(T0);
    const usage = sliding(clock);
    const s = scope();
    const input = new InputCounter(new QuotaLimit('itpm', 5_000), usage.tokens, s);
    usage.tokens.add(2_000, clock.ms);
    input.anchor({ remaining: 4_000 }, ours(clock.ms));
    expect(input.used(clock.ms)).toBe(1_000);
    input.anchor({ remaining: 2_500 }, ours(clock.ms));
    expect(input.used(clock.ms)).toBeCloseTo(2_500);
    expect(fits(input, call(2_500), clock.ms)).toBe(true);
    expect(fits(input, call(2_501), clock.ms)).toBe(false);
    clock.advance(30_000);
    expect(input.used(clock.ms)).toBeCloseTo(1_000 + 1_500 / 2);
    expect(input.exceeds(call(5_001))).toBe(5_001);
    expect((s.reported as Record<LimitName, unknown>).itpm).toEqual({ remaining: 2_500, at: T0 });
  });
});

describe('the rate-limit header parser', () => {
  it('returns the resets with their precision when asked', () => {
    const h = new Headers({
      'x-ratelimit-remaining-tokens': '900',
      'x-ratelimit-reset-tokens': '2',
      'x-ratelimit-remaining-requests': '9',
      'x-ratelimit-reset-requests': '1.25',
    });
    expect(readRateLimits(h, false, 'openai', true)).toEqual({
      tokens: { limit: undefined, remaining: 900, reset: { ms: 2_000, grain: 1_000 } },
      requests: { limit: undefined, remaining: 9, reset: { ms: 1_250, grain: 10 } },
    });
    expect(readRateLimits(h, false, 'openai')?.tokens?.reset).toBeUndefined();
    const bound = (v: string) =>
      readResetBound(new Headers({ 'x-ratelimit-reset-tokens': v }), 'tokens');
    expect(bound('0.412')).toEqual({ ms: 412, grain: 1 });
    expect(bound('6m0s')).toEqual({ ms: 360_000, grain: 1_000 });
    expect(bound('12ms')).toEqual({ ms: 12, grain: 1 });
    expect(bound('x')).toBeUndefined();
  });

  it('writes into a reading it is given, and leaves nothing of the one before', () => {
    const into = {};
    const openai = new Headers({
      'x-ratelimit-remaining-tokens': '900',
      'x-ratelimit-reset-tokens': '2',
      'x-ratelimit-remaining-requests': '9',
    });
    const first = readRateLimits(openai, false, 'openai', true, into);
    expect(first).toBe(into);
    const tokens = first!.tokens;
    expect(first).toEqual({
      tokens: { limit: undefined, remaining: 900, reset: { ms: 2_000, grain: 1_000 } },
      requests: { limit: undefined, remaining: 9 },
    });
    // The next answer is written over the same objects; its reset was not asked for.
    const next = new Headers({
      'x-ratelimit-remaining-tokens': '800',
      'x-ratelimit-limit-tokens': '1000',
    });
    const second = readRateLimits(next, true, 'openai', false, into);
    expect(second).toBe(into);
    expect(second!.tokens).toBe(tokens);
    expect(second).toEqual({ tokens: { limit: 1_000, remaining: 800 }, requests: undefined });
    // Another family's answer into the same reading, and back: no field of the other stays.
    const claude = new Headers({
      'anthropic-ratelimit-requests-remaining': '40',
      'anthropic-ratelimit-input-tokens-remaining': '20000',
    });
    expect(readRateLimits(claude, false, undefined, false, into)).toEqual({
      requests: { limit: undefined, remaining: 40 },
      tokens: undefined,
      input: { limit: undefined, remaining: 19_500 },
      output: undefined,
    });
    expect(readRateLimits(next, false, undefined, false, into)).toEqual({
      tokens: { limit: undefined, remaining: 800 },
      requests: undefined,
      input: undefined,
      output: undefined,
    });
    // Nothing to read: nothing written, the last reading stands.
    expect(readRateLimits(new Headers(), false, undefined, false, into)).toBeUndefined();
    expect(into).toEqual({ tokens: { limit: undefined, remaining: 800 } });
  });
});

import type { SharedReading } from '../../src/quota/reading';
import { ModelState } from '../../src/registry/model-state';
import { WindowCount } from '../../src/quota/window-count';
import { readResetBound } from '../../src/quota/rate-limit-headers';
import { FakeClock } from '../support/random';

const azure = (h: Record<string, number | string>) =>
  new Headers(Object.fromEntries(Object.entries(h).map(([k, v]) => [k, String(v)])));

const state = (clock: FakeClock, limits: { tpm?: number; rpm?: number } = { tpm: 10_000 }) => {
  const s = new ModelState({ name: 'm', ...limits }, 'east', clock.now, { upstream: 'azure' });
  s.quota.slide(60_000);
  return s;
};

/** A ledger's tokens and requests windows, sliding over a minute in 60 buckets. */
function windows(clock: FakeClock): { tokens: WindowCount; requests: WindowCount } {
  const tokens = new WindowCount(clock.now);
  const requests = new WindowCount(clock.now, true);
  tokens.configure('sliding', 60_000, 60);
  requests.configure('sliding', 60_000, 60);
  return { tokens, requests };
}

describe('WindowCount.trimOldest and before', () => {
  it('takes usage off the oldest buckets first, the newest sixth included only when reached', () => {
    const clock = new FakeClock(1_700_000_000_000);
    const { tokens, requests } = windows(clock);
    const add = (t: number, r: number) => {
      tokens.add(t);
      requests.add(r);
    };
    add(100, 1);
    clock.advance(20_000);
    add(200, 2);
    clock.advance(35_000);
    add(300, 3); // in the newest sixth
    expect([tokens.before(clock.ms, clock.ms), requests.before(clock.ms, clock.ms)]).toEqual([
      300, 3,
    ]);
    tokens.trimOldest(150, clock.ms);
    requests.trimOldest(2, clock.ms);
    expect(tokens.at(clock.ms)).toBe(450);
    expect(requests.at(clock.ms)).toBe(4);
    expect(requests.recentAt(clock.ms)).toBe(3);
    tokens.trimOldest(10_000, clock.ms);
    requests.trimOldest(10, clock.ms);
    expect(tokens.at(clock.ms)).toBe(0);
    expect(requests.at(clock.ms)).toBe(0);
    expect(requests.recentAt(clock.ms)).toBe(0);
  });

  it('counts a bucket that the time falls inside as after it', () => {
    const clock = new FakeClock(1_700_000_000_000);
    const { tokens, requests } = windows(clock);
    tokens.add(100);
    requests.add(1);
    clock.advance(1_500);
    tokens.add(50);
    requests.add(1);
    const before = (t: number) => [tokens.before(t, clock.ms), requests.before(t, clock.ms)];
    expect(before(clock.ms)).toEqual([100, 1]);
    expect(before(clock.ms + 5_000)).toEqual([150, 2]);
    expect(before(clock.ms - 60_000)).toEqual([0, 0]);
  });
});

describe('readResetBound', () => {
  it("reads Azure's seconds and OpenAI's durations", () => {
    const at = (v: string) =>
      readResetBound(azure({ 'x-ratelimit-reset-tokens': v }), 'tokens')?.ms;
    expect(at('15')).toBe(15_000);
    expect(at('1.25')).toBe(1_250);
    expect(at('6m0s')).toBe(360_000);
    expect(at('1m30.5s')).toBe(90_500);
    expect(at('12ms')).toBe(12);
    expect(at('soon')).toBeUndefined();
    expect(at('-3')).toBeUndefined();
    expect(readResetBound(azure({ 'x-ratelimit-reset-requests': '2' }), 'requests')?.ms).toBe(
      2_000,
    );
    expect(readResetBound(azure({}), 'tokens')).toBeUndefined();
  });
});

describe('anchoring on a fixed upstream window', () => {
  it('forgets what the upstream no longer counts, so that it cannot reappear later', () => {
    const clock = new FakeClock();
    const s = state(clock);
    const old = { input: 6000, output: 0 };
    s.admit(old);
    s.settle(old, { input: 6000, output: 0 });
    clock.advance(30_000);
    const b = { input: 2000, output: 0 };
    s.admit(b);
    // The upstream's minute rolled since `old`: it counts `b` only.
    s.quota.observe(azure({ 'x-ratelimit-remaining-tokens': 8000 }), b);
    s.settle(b, { input: 2000, output: 0 });
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(2000);
    // `old` slides out of our window at 60 s; a fading correction would have kept taking 6000
    // off until 90 s and hidden `b` from the count.
    clock.advance(31_000);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(2000);
    expect(s.hasRoom({ input: 8000, output: 0 })).toBe(true);
    expect(s.hasRoom({ input: 8001, output: 0 })).toBe(false);
  });

  it("forgets everything it counted when the upstream's window ends, as its reset header said", () => {
    const clock = new FakeClock();
    const s = state(clock);
    const a = { input: 5000, output: 1000 };
    s.admit(a);
    s.quota.observe(
      azure({ 'x-ratelimit-remaining-tokens': 4000, 'x-ratelimit-reset-tokens': '20' }),
      a,
    );
    s.settle(a, { input: 5000, output: 30 });
    const big = { input: 4001, output: 0 };
    expect(s.hasRoom(big)).toBe(false);
    // Room is expected when the upstream's window ends, not when our usage slides out.
    expect(s.roomAt(big)).toBe(20_000);
    clock.advance(19_999);
    expect(s.hasRoom(big)).toBe(false);
    clock.advance(1);
    expect(s.quota.anchoredUsage().tpm).toBe(0);
    expect(s.hasRoom({ input: 10_000, output: 0 })).toBe(true);
  });

  it('forgets what was sent before the window ended as of its send, and acts once answers can tell', () => {
    const clock = new FakeClock();
    const s = state(clock);
    const a = { input: 6000, output: 0 };
    const sentAt = s.admit(a);
    clock.advance(5_000); // a long answer: the header was written 5 s ago, when `a` arrived
    s.quota.observe(
      azure({ 'x-ratelimit-remaining-tokens': 4000, 'x-ratelimit-reset-tokens': '10' }),
      a,
      sentAt,
    );
    s.settle(a, { input: 6000, output: 0 });
    // The window ends 10 s after `a` arrived; a send just after may still land in it, so the
    // count stays until an answer written after the end could have come back.
    clock.advance(7_000);
    const late = { input: 1000, output: 0 };
    s.admit(late); // sent after the end: it counts in the next window
    s.settle(late, { input: 1000, output: 0 });
    clock.advance(2_999);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(7000);
    clock.advance(1);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(1000);
  });

  it('keeps calls sent after the window ended, and the ones still in flight', () => {
    const clock = new FakeClock();
    const s = state(clock);
    const a = { input: 6000, output: 0 };
    s.admit(a);
    s.quota.observe(
      azure({ 'x-ratelimit-remaining-tokens': 4000, 'x-ratelimit-reset-tokens': '1' }),
      a,
    );
    s.settle(a, { input: 6000, output: 0 });
    const flying = { input: 1000, output: 0 };
    s.admit(flying); // sent before the end, answered after it: it may land in the next window
    clock.advance(2_000);
    const next = { input: 500, output: 0 };
    expect(s.hasRoom(next)).toBe(true); // routing looks before it sends
    s.admit(next);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(1500);
  });

  it("counts another application's usage until the window ends, and routes as if its pace went on", () => {
    const clock = new FakeClock();
    const s = state(clock);
    const a = { input: 900, output: 100 };
    s.admit(a);
    // 3000 counted 30 s into the window: ours 1000 and 2000 of someone else's, who will use about
    // as much again before it ends.
    s.quota.observe(
      azure({ 'x-ratelimit-remaining-tokens': 7000, 'x-ratelimit-reset-tokens': '30' }),
      a,
    );
    s.settle(a, { input: 900, output: 30 });
    // Admission goes by the count now; utilization, which routing compares, leaves them room.
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(3000);
    expect(s.hasRoom({ input: 7000, output: 0 })).toBe(true);
    expect(s.hasRoom({ input: 7001, output: 0 })).toBe(false);
    expect(s.util).toBeCloseTo(0.5);
    clock.advance(29_999);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(3000);
    expect(s.util).toBeCloseTo(0.3);
    clock.advance(1);
    // The window ended: all of it is forgotten, and others go on at their pace in the next one
    // (4000 a window), until a header says otherwise.
    expect(s.quota.anchoredUsage().tpm).toBe(0);
    expect(s.util).toBeCloseTo(0.4);
    clock.advance(15_000);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(1000);
    expect(s.hasRoom({ input: 9000, output: 0 })).toBe(true);
    expect(s.hasRoom({ input: 9001, output: 0 })).toBe(false);
    expect(s.util).toBeCloseTo(0.4);
    clock.advance(45_000);
    expect(s.quota.anchoredUsage().tpm).toBe(0);
    expect(s.util).toBe(0);
  });

  it("reads someone else's pace no faster than over a quarter of the window", () => {
    const clock = new FakeClock();
    const s = state(clock);
    const a = { input: 50, output: 50 };
    s.admit(a);
    // 1 s into the window, 500 of someone else's: not 30 000 a minute, at most four times it.
    s.quota.observe(
      azure({ 'x-ratelimit-remaining-tokens': 9400, 'x-ratelimit-reset-tokens': '59' }),
      a,
    );
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(600);
    expect(s.util).toBeCloseTo((600 + (2000 * 59) / 60) / 10_000);
  });

  it('takes no pace from a difference that may be the reservation of its own uncapped calls', () => {
    const clock = new FakeClock();
    const s = state(clock);
    const a = { input: 1000, output: 0 }; // no max_tokens: the upstream reserves what it likes
    s.admit(a);
    s.quota.observe(
      azure({ 'x-ratelimit-remaining-tokens': 7000, 'x-ratelimit-reset-tokens': '30' }),
      a,
    );
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(3000);
    expect(s.util).toBeCloseTo(0.3);
  });

  it('takes no pace from an uncapped call charged the default reservation either', () => {
    const clock = new FakeClock();
    const s = state(clock);
    // Priced at Azure's default reservation (648): its output is no longer 0 when admitted.
    const a = { input: 1000, output: 0, uncapped: 1 };
    s.admit(a);
    expect(a.output).toBe(648);
    // Another call on its way: the answer cannot teach the reservation.
    const b = { input: 100, output: 100 };
    s.admit(b);
    // The upstream reserved 2 000 (1 352 more than we charged), which is not someone else's pace.
    s.quota.observe(
      azure({ 'x-ratelimit-remaining-tokens': 7000, 'x-ratelimit-reset-tokens': '30' }),
      a,
    );
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(3200);
    expect(s.util).toBeCloseTo(0.32);
  });

  it('reads the end of the window once per window while nobody else shows in the count', () => {
    const clock = new FakeClock();
    const s = state(clock);
    const lookups: string[] = [];
    const counting = (remaining: number) => {
      const h = azure({
        'x-ratelimit-remaining-tokens': remaining,
        'x-ratelimit-reset-tokens': '30',
      });
      return {
        get: (name: string) => {
          lookups.push(name);
          return h.get(name);
        },
      };
    };
    const resets = () => lookups.filter((n) => n === 'x-ratelimit-reset-tokens').length;
    const a = { input: 1000, output: 0 };
    s.admit(a);
    s.quota.observe(counting(9000), a);
    s.settle(a, { input: 1000, output: 0 });
    expect(resets()).toBe(1);
    const b = { input: 1000, output: 0 };
    s.admit(b);
    s.quota.observe(counting(8000), b);
    s.settle(b, { input: 1000, output: 0 });
    expect(resets()).toBe(1);
    clock.advance(30_000); // the window ended: the next one's end is read again
    const c = { input: 1000, output: 0 };
    s.admit(c);
    s.quota.observe(counting(9000), c);
    expect(resets()).toBe(2);
  });

  it("counts a 429's call out once: its header already left it out", () => {
    const clock = new FakeClock();
    const s = state(clock);
    const before = { input: 9000, output: 0 };
    s.admit(before);
    s.settle(before, { input: 9000, output: 0 });
    const refused = { input: 1000, output: 500 };
    s.admit(refused);
    // The upstream counts 9500 (someone else's 500 too) and refused this call.
    s.quota.observe(
      azure({ 'x-ratelimit-remaining-tokens': 500, 'retry-after-ms': 3000 }),
      refused,
    );
    s.release(refused);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(9500);
  });

  it('trims only its own share when other replicas share the count', () => {
    const clock = new FakeClock();
    const s = state(clock);
    const a = { input: 4000, output: 0 };
    s.admit(a);
    s.settle(a, { input: 4000, output: 0 });
    s.quota.shared = { tokens: 4000, requests: 0 };
    const b = { input: 1000, output: 0 };
    s.admit(b);
    // The upstream counts 5000 of our 9000 together: 4000 too many, 5/9 of them ours.
    s.quota.observe(azure({ 'x-ratelimit-remaining-tokens': 5000 }), b);
    expect(s.quota.localUsage().tokens).toBeCloseTo(5000 - (4000 * 5) / 9);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(9000 - (4000 * 5) / 9);
  });
});

describe("the others' usage by when it was sent (a shared state store)", () => {
  const T0 = 1_700_000_040_000;
  /** Others' usage as a store reports it: spans of send times `[start, end, tokens, requests]`. */
  const others = (...spans: number[][]) => {
    const flat = spans.flat();
    let tokens = 0;
    let requests = 0;
    for (let i = 0; i < flat.length; i += 4) {
      tokens += flat[i + 2]!;
      requests += flat[i + 3]!;
    }
    return { tokens, requests, recentRequests: 0, spans: flat };
  };

  /** One call of ours sent at T0 whose answer, 100 ms later, reports `upstream` tokens counted. */
  const anchored = (upstream: number) => {
    const clock = new FakeClock(T0);
    const s = state(clock);
    s.quota.shared = others([T0 - 2_000, T0 - 1_000, 3_000, 3]);
    const call = { input: 1_000, output: 0 };
    const sentAt = s.admit(call);
    clock.advance(100);
    s.quota.observe(
      azure({ 'x-ratelimit-remaining-tokens': 10_000 - upstream, 'x-ratelimit-reset-tokens': 30 }),
      call,
      sentAt,
    );
    s.settle(call, { input: 1_000, output: 0 });
    return { clock, s };
  };

  it('counts once what an answer already counted and a later sync reports', () => {
    // The upstream counts the others' 3 000, our 1 000 and 500 of theirs not reported yet.
    const { clock, s } = anchored(4_500);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(4_500);
    // The next sync reports those 500, sent before the answer was written: already counted.
    s.quota.shared = others([T0 - 2_000, T0 - 1_000, 3_000, 3], [T0 - 1_000, T0, 500, 1]);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(4_500);
    // What they sent after it comes on top, whole, or in proportion for the span it falls in.
    clock.advance(2_000);
    s.quota.shared = others(
      [T0 - 2_000, T0 - 1_000, 3_000, 3],
      [T0 - 1_000, T0, 500, 1],
      [T0, T0 + 1_000, 400, 1],
      [T0 + 1_000, T0 + 2_000, 700, 1],
    );
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(4_500 + 400 + 700);
    // The totals stay what the store reported, for operators.
    expect(s.tpmUsage).toBe(1_000 + 4_600);
  });

  it("forgets the others' usage of the upstream's window when it ends, as it forgets its own", () => {
    const { clock, s } = anchored(4_500);
    const past = [
      [T0 - 2_000, T0 - 1_000, 3_000, 3],
      [T0 - 1_000, T0, 500, 1],
      [T0 + 1_000, T0 + 2_000, 700, 1],
    ];
    // The window ends 30 s after the answer was written; theirs after it is all that counts.
    clock.ms = T0 + 31_000;
    s.quota.shared = others(...past, [T0 + 30_500, T0 + 31_000, 200, 1]);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(200);
    expect(s.quota.localUsage().tokens).toBe(0); // ours was sent before the end too
    // Still within the sliding minute, yet gone upstream: a call of 9 000 fits.
    expect(s.hasRoom({ input: 9_000, output: 0 })).toBe(true);
    expect(s.tpmUsage).toBe(4_400);
  });

  it('leaves the count alone when the store does not say when usage was sent', () => {
    const clock = new FakeClock(T0);
    const s = state(clock);
    s.quota.shared = { tokens: 3_000, requests: 3 };
    const call = { input: 1_000, output: 0 };
    const sentAt = s.admit(call);
    clock.advance(100);
    s.quota.observe(azure({ 'x-ratelimit-remaining-tokens': 5_500 }), call, sentAt);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(4_500);
    s.quota.shared = { tokens: 3_500, requests: 4 };
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(5_000); // no send times: the 500 count again
  });

  it("weighs the others' requests of the newest sixth by when they were sent, between syncs too", () => {
    const clock = new FakeClock(T0);
    const s = state(clock, { tpm: 100_000, rpm: 60 }); // rpm / 6 = 10 per 10 s
    s.quota.shared = { ...others([T0 - 5_000, T0 - 4_000, 900, 9]), recentRequests: 9 };
    const call = { input: 10, output: 0 };
    expect(s.hasRoom(call)).toBe(true);
    s.admit(call);
    expect(s.hasRoom(call)).toBe(false); // 9 + 1 of 10 in the last 10 s
    clock.advance(5_500); // half of their span is older than 10 s now
    expect(s.hasRoom(call)).toBe(true);
    expect(s.quota.recent()!.used).toBeCloseTo(4.5 + 1);
    clock.advance(1_000); // all of it: no sync needed to see it leave
    expect(s.quota.recent()!.used).toBeCloseTo(1);
    expect(s.rpmUsage).toBe(10); // the minute still holds them
  });
});

describe("another instance's answer (a shared state store)", () => {
  const T0 = 1_700_000_040_000;
  const others = (...spans: number[][]) => {
    const flat = spans.flat();
    let tokens = 0;
    for (let i = 0; i < flat.length; i += 4) tokens += flat[i + 2]!;
    return { tokens, requests: flat.length / 4, recentRequests: 0, spans: flat };
  };
  /**
   * Another instance's call of `tokens` sent at `sentAt`, answered 100 ms later with `upstream`
   * tokens counted.
   */
  const theirs = (sentAt: number, upstream: number, tokensEnd = 0, tokens = 0): SharedReading => ({
    sentAt,
    at: sentAt + 100,
    tokens,
    tokensEnd,
    requestsEnd: 0,
    reading: { tokens: { limit: 10_000, remaining: 10_000 - upstream } },
  });
  /** An instance that sent 1 000 tokens at T0 - 3 s and knows of the others' 3 000 before T0. */
  const replica = () => {
    const clock = new FakeClock(T0 - 3_000);
    const s = state(clock);
    const call = { input: 1_000, output: 0 };
    s.admit(call);
    s.settle(call, { input: 1_000, output: 0 });
    clock.ms = T0 + 500;
    s.quota.shared = others([T0 - 2_000, T0 - 1_000, 3_000, 3]);
    return { clock, s };
  };

  it('takes the upstream count it reported, and adds what was sent after that call', () => {
    const { clock, s } = replica();
    expect(s.quota.anchoredUsage().tpm).toBe(4_000); // ours and the others', nobody else seen
    // Their call of 400 at T0 comes with its answer: the upstream counted 6 000 then, 1 600 of it
    // an application nobody shares with.
    s.quota.shared = others([T0 - 2_000, T0 - 1_000, 3_000, 3], [T0, T0 + 1_000, 400, 1]);
    expect(s.quota.replay(theirs(T0, 6_000, T0 + 30_000, 400))).toBe(true);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(6_000); // their call once, not once more
    expect(s.quota.upstreamRemaining.tpm).toEqual({ remaining: 4_000, at: T0 + 100 });
    // Sent after it, by the others and by us: on top.
    clock.ms = T0 + 1_500;
    s.quota.shared = others(
      [T0 - 2_000, T0 - 1_000, 3_000, 3],
      [T0, T0 + 1_000, 400, 1],
      [T0 + 1_000, T0 + 2_000, 300, 1],
    );
    const call = { input: 200, output: 0 };
    s.admit(call);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(6_000 + 300 + 200);
    // The unseen application's usage stays until the upstream's window ends, as it said.
    clock.ms = T0 + 29_000;
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(6_500);
    clock.ms = T0 + 30_100;
    expect(s.quota.anchoredUsage().tpm).toBeLessThan(500);
  });

  it('counts no more than the upstream did: a view that said full shows room again', () => {
    const { s } = replica();
    const big = { input: 6_500, output: 0 };
    expect(s.hasRoom(big)).toBe(false); // 4 000 + 6 500 by the shared view
    // The upstream counted 3 000 at T0 (some of what the view holds was refused, or rolled out).
    expect(s.quota.replay(theirs(T0, 3_000))).toBe(true);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(3_000);
    expect(s.hasRoom(big)).toBe(true);
    // Less than we sent before it ourselves: the excess is ours to forget, oldest first.
    expect(s.quota.replay(theirs(T0 + 200, 600))).toBe(true);
    expect(s.quota.localUsage().tokens).toBe(600);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(600);
  });

  it('leaves alone a reading older than the last answer anchored on, or of a window that ended', () => {
    const { clock, s } = replica();
    const call = { input: 100, output: 0 };
    const sentAt = s.admit(call);
    clock.advance(100);
    s.quota.observe(azure({ 'x-ratelimit-remaining-tokens': 4_900 }), call, sentAt); // 5 100 counted
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(5_100);
    expect(s.quota.replay(theirs(sentAt - 200, 9_000))).toBe(false);
    expect(s.quota.replay(theirs(clock.now() + 300, 9_000))).toBe(false); // sent "later" than our now
    expect(s.quota.replay(theirs(sentAt + 50, 9_000, sentAt + 80))).toBe(false); // its window is over
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(5_100);
    // Without send times of the others' usage, a reading cannot be set against the shared view.
    s.quota.shared = { tokens: 3_000, requests: 3 };
    expect(s.quota.replay(theirs(sentAt + 50, 9_000))).toBe(false);
  });
});

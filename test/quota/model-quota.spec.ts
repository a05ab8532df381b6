import type { ModelEvent } from '../../src/registry/model-event';
import { ModelState } from '../../src/registry/model-state';
import { chatCompletions } from '../../src/providers/openai/chat';
import { readRateLimits } from '../../src/quota/rate-limit-headers';
import { FakeClock } from '../support/random';

const azureHeaders = (h: Record<string, number>) =>
  new Headers(Object.fromEntries(Object.entries(h).map(([k, v]) => [k, String(v)])));

describe('admission charge', () => {
  it('is the prompt estimate plus the output cap, and no invented reservation without one', () => {
    const messages = [{ role: 'user', content: 'x'.repeat(400) }];
    const admission = (body: Record<string, unknown>, defaultOutput = 0) =>
      chatCompletions.admission({ messages, ...body }, defaultOutput);
    const input = admission({}).input;
    expect(input).toBeGreaterThanOrEqual(100);
    expect(admission({ max_tokens: 256 })).toEqual({ input, output: 256 });
    expect(admission({ max_completion_tokens: 64, max_tokens: 256 })).toEqual({
      input,
      output: 64,
    });
    // No cap: the deployment it goes to charges its own reservation per output (chat's `n`).
    expect(admission({})).toEqual({ input, output: 0, uncapped: 1 });
    expect(admission({ n: 3 })).toEqual({ input, output: 0, uncapped: 3 });
    expect(admission({}, 4096)).toEqual({ input, output: 4096 });
  });

  it('keeps the Azure reservation for the minute and corrects only the prompt estimate', () => {
    const clock = new FakeClock();
    const s = new ModelState({ name: 'm', tpm: 10_000 }, 'east', clock.now, { upstream: 'azure' });
    s.quota.slide(60_000);
    const a = { input: 100, output: 256 };
    s.admit(a);
    expect(s.tpmUsage).toBe(356);
    expect(s.rpmUsage).toBe(1);
    s.settle(a, { input: 120, output: 30 });
    expect(s.tpmUsage).toBe(376); // the 226 unused output tokens stay charged
    const uncapped = { input: 50, output: 0 };
    s.admit(uncapped);
    s.settle(uncapped, { input: 50, output: 40 });
    expect(s.tpmUsage).toBe(466);
  });

  it('settles Foundry charges to what was used, cache writes as input, cache reads free', () => {
    const clock = new FakeClock();
    // The buckets' own arithmetic: no ramp (ramp.spec) holds the second call back.
    const s = new ModelState({ name: 'c', itpm: 1000, otpm: 500, rampUp: false }, 'f', clock.now, {
      upstream: 'anthropic',
    });
    s.quota.slide(60_000);
    const a = { input: 100, output: 400 };
    s.admit(a);
    expect(s.quota.ioUsage()).toEqual({ input: 100, output: 400 });
    expect(s.hasRoom({ input: 10, output: 101 })).toBe(false); // otpm: 400 + 101 > 500
    expect(s.hasRoom({ input: 10, output: 100 })).toBe(true);
    s.settle(a, { input: 90, output: 50, cacheWrite: 200, cacheRead: 5000 });
    expect(s.quota.ioUsage()).toEqual({ input: 290, output: 50 });
    expect(s.tpmUsage).toBe(340);
  });

  it('gives the tokens back when a call fails before the upstream produced anything', () => {
    const s = new ModelState({ name: 'm', tpm: 1000, rpm: 60 }, 'east', new FakeClock().now);
    const a = { input: 100, output: 100 };
    s.admit(a);
    s.release(a);
    expect(s.tpmUsage).toBe(0);
    expect(s.rpmUsage).toBe(1);
  });
});

describe('room', () => {
  const make = (clock: FakeClock, config = { tpm: 10_000, rpm: 600 }) => {
    const s = new ModelState({ name: 'm', ...config }, 'east', clock.now);
    s.quota.slide(60_000);
    return s;
  };

  it('has room while the charge fits every limit, and says when it will', () => {
    const clock = new FakeClock();
    const s = make(clock);
    s.admit({ input: 6000, output: 3000 });
    expect(s.hasRoom({ input: 500, output: 500 })).toBe(true);
    expect(s.hasRoom({ input: 500, output: 501 })).toBe(false);
    expect(s.roomAt({ input: 500, output: 500 })).toBe(0);
    // The 9000 tokens leave with their bucket, just over a minute after they were charged.
    expect(s.roomAt({ input: 1000, output: 1000 })).toBe(60_500);
    clock.advance(60_500);
    expect(s.hasRoom({ input: 1000, output: 1000 })).toBe(true);
  });

  it("counts Azure's rpm / 6 per 10 s", () => {
    const clock = new FakeClock();
    const s = make(clock, { tpm: 0, rpm: 60 });
    for (let i = 0; i < 10; i++) s.admit({ input: 1, output: 0 });
    expect(s.hasRoom({ input: 1, output: 0 })).toBe(false);
    const wait = s.roomAt({ input: 1, output: 0 });
    expect(wait).toBeGreaterThan(10_000);
    expect(wait).toBeLessThanOrEqual(10_500);
    clock.advance(wait);
    expect(s.hasRoom({ input: 1, output: 0 })).toBe(true);
  });

  it('tells a call that can never fit from one that must wait', () => {
    const s = make(new FakeClock());
    expect(s.quota.exceeds({ input: 9000, output: 1024 })).toEqual({
      limit: 'tpm',
      value: 10_000,
      charge: 10_024,
    });
    expect(s.roomAt({ input: 9000, output: 1024 })).toBe(Infinity);
    expect(s.quota.exceeds({ input: 9000, output: 1000 })).toBeUndefined();
  });

  it('has no room while cooling; a 429 cooldown is quota, a hand mark-down is down', () => {
    const clock = new FakeClock();
    const s = make(clock);
    const a = { input: 1, output: 1 };
    s.markDown(2000, 'rate_limit');
    expect(s.hasRoom(a)).toBe(false);
    expect(s.blockedBy(a)).toBe('quota');
    expect(s.roomAt(a)).toBe(2000);
    s.markUp();
    s.markDown(5000);
    expect(s.blockedBy(a)).toBe('down');
    expect(s.downReason).toBeUndefined();
    clock.advance(5000);
    expect(s.blockedBy(a)).toBe('room');
  });
});

describe('anchoring on the upstream headers', () => {
  it('reads Azure and Anthropic headers, and nothing from an answer without them', () => {
    expect(readRateLimits(new Headers({ 'content-type': 'application/json' }))).toBeUndefined();
    expect(
      readRateLimits(
        azureHeaders({ 'x-ratelimit-remaining-tokens': 700, 'x-ratelimit-limit-tokens': 1000 }),
      ),
    ).toEqual({ tokens: { limit: 1000, remaining: 700 }, requests: undefined });
    const r = readRateLimits(
      azureHeaders({
        'anthropic-ratelimit-requests-remaining': 49,
        'anthropic-ratelimit-input-tokens-limit': 30_000,
        'anthropic-ratelimit-input-tokens-remaining': 29_000,
        'anthropic-ratelimit-output-tokens-remaining': 7000,
      }),
    );
    // Anthropic rounds remaining tokens to the nearest thousand: read on the safe side, 500 less.
    expect(r?.input).toEqual({ limit: 30_000, remaining: 28_500 });
    expect(r?.output).toEqual({ limit: undefined, remaining: 6500 });
    expect(r?.requests).toEqual({ limit: undefined, remaining: 49 });
  });

  it('reads only its own family when told it, with two lookups for an answer with or without them', () => {
    const lookups: string[] = [];
    const counting = (values: Record<string, string>) => ({
      get: (name: string) => {
        lookups.push(name);
        return values[name] ?? null;
      },
    });
    expect(readRateLimits(counting({}), false, 'openai')).toBeUndefined();
    expect(lookups).toHaveLength(2);
    lookups.length = 0;
    const azure = counting({
      'x-ratelimit-remaining-tokens': '700',
      'x-ratelimit-remaining-requests': '9',
    });
    expect(readRateLimits(azure, false, 'openai')).toEqual({
      tokens: { limit: undefined, remaining: 700 },
      requests: { limit: undefined, remaining: 9 },
    });
    expect(lookups).toHaveLength(2);
    lookups.length = 0;
    // Anthropic's headers on a deployment read as OpenAI's are not looked for.
    expect(
      readRateLimits(counting({ 'anthropic-ratelimit-requests-remaining': '4' }), true, 'openai'),
    ).toBeUndefined();
    expect(lookups.every((name) => name.startsWith('x-ratelimit-'))).toBe(true);
  });

  it("takes another application's usage from the header, and lets it fade with the window", () => {
    const clock = new FakeClock();
    const s = new ModelState({ name: 'm', tpm: 10_000 }, 'east', clock.now);
    s.quota.slide(60_000);
    const a = { input: 500, output: 500 };
    s.admit(a);
    // The upstream counts 6000 used: ours (1000) and 5000 of someone else's.
    s.quota.observe(azureHeaders({ 'x-ratelimit-remaining-tokens': 4000 }), a);
    s.settle(a, { input: 500, output: 200 });
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(6000);
    expect(s.util).toBeCloseTo(0.6);
    expect(s.hasRoom({ input: 3000, output: 1000 })).toBe(true);
    expect(s.hasRoom({ input: 3000, output: 1001 })).toBe(false);
    clock.advance(30_000);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(3500); // half of the 5000 faded out
    clock.advance(31_000);
    expect(s.quota.anchoredUsage().tpm).toBe(0);
  });

  it('leaves calls in flight out: the header was written before they were admitted', () => {
    const clock = new FakeClock();
    const s = new ModelState({ name: 'm', tpm: 10_000 }, 'east', clock.now);
    s.quota.slide(60_000);
    const first = { input: 1000, output: 0 };
    const later = { input: 2000, output: 0 };
    s.admit(first);
    s.admit(later); // sent after `first`, not yet in the upstream's count
    s.quota.observe(azureHeaders({ 'x-ratelimit-remaining-tokens': 9000 }), first);
    // The upstream agrees with us: no correction.
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(3000);
  });

  it('lowers our count when the upstream counts less (its fixed minute ended)', () => {
    const clock = new FakeClock();
    const s = new ModelState({ name: 'm', tpm: 10_000 }, 'east', clock.now);
    s.quota.slide(60_000);
    const a = { input: 8000, output: 0 };
    s.admit(a);
    s.settle(a, { input: 8000, output: 0 });
    const b = { input: 1000, output: 0 };
    s.admit(b);
    s.quota.observe(azureHeaders({ 'x-ratelimit-remaining-tokens': 9000 }), b);
    expect(s.quota.anchoredUsage().tpm).toBeCloseTo(1000);
    expect(s.hasRoom({ input: 8000, output: 0 })).toBe(true);
  });

  it('anchors the requests of the 10-s window when the header speaks of rpm / 6', () => {
    const clock = new FakeClock();
    const s = new ModelState({ name: 'm', rpm: 60 }, 'east', clock.now);
    s.quota.slide(60_000);
    const a = { input: 1, output: 0 };
    s.admit(a);
    s.quota.observe(
      azureHeaders({ 'x-ratelimit-limit-requests': 10, 'x-ratelimit-remaining-requests': 2 }),
      a,
    );
    expect(s.quota.limits.rpm.value).toBe(60); // a 10-s limit is not a per-minute one
    expect(s.util).toBeCloseTo(0.8);
    expect(s.hasRoom(a)).toBe(true);
    s.admit(a);
    s.admit(a);
    expect(s.hasRoom(a)).toBe(false);
  });

  it('learns limits it was not given, and corrects a configured one once, with an event', () => {
    const clock = new FakeClock();
    const events: ModelEvent[] = [];
    const s = new ModelState({ name: 'm', tpm: 20_000 }, 'east', clock.now);
    s.listener = (_s, e) => events.push(e);
    const h = azureHeaders({
      'x-ratelimit-limit-tokens': 10_000,
      'x-ratelimit-remaining-tokens': 10_000,
      'x-ratelimit-limit-requests': 100,
      'x-ratelimit-remaining-requests': 100,
    });
    s.quota.observe(h);
    s.quota.observe(h);
    expect(s.quota.limits.tpm.value).toBe(10_000);
    expect(s.quota.limits.tpm.learned).toBe(true);
    expect(s.quota.limits.rpm.value).toBe(100);
    expect(events.filter((e) => e.type === 'limit')).toEqual([
      { type: 'limit', limit: 'tpm', value: 10_000, was: 20_000, configured: true },
      { type: 'limit', limit: 'rpm', value: 100, was: 0, configured: false },
    ]);
  });

  it('learns the three Foundry limits from anthropic-ratelimit-* headers', () => {
    const s = new ModelState({ name: 'c' }, 'f', new FakeClock().now, { upstream: 'anthropic' });
    s.quota.observe(
      azureHeaders({
        'anthropic-ratelimit-requests-limit': 50,
        'anthropic-ratelimit-requests-remaining': 50,
        'anthropic-ratelimit-input-tokens-limit': 30_000,
        'anthropic-ratelimit-input-tokens-remaining': 30_000,
        'anthropic-ratelimit-output-tokens-limit': 8000,
        'anthropic-ratelimit-output-tokens-remaining': 8000,
      }),
    );
    expect([
      s.quota.limits.rpm.value,
      s.quota.limits.itpm.value,
      s.quota.limits.otpm.value,
      s.quota.limits.tpm.value,
    ]).toEqual([50, 30_000, 8000, 0]);
    // OTPM counts what answers produce: a cap above it is no reason never to send the call.
    expect(s.quota.exceeds({ input: 100, output: 9000 })).toBeUndefined();
    // A learned limit may have been said too low: one call above it goes per window, as a probe.
    const probe = { input: 31_000, output: 9000 };
    expect(s.quota.exceeds(probe)).toBeUndefined();
    expect(s.quota.hasRoom(probe)).toBe(true);
    s.quota.admit(probe);
    expect(s.quota.exceeds({ input: 31_000, output: 9000 })).toEqual({
      limit: 'itpm',
      value: 30_000,
      charge: 31_000,
    });
  });
});

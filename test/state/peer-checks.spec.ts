import { ModelState } from '../../src/registry/model-state';
import { peerFold, type PeerReport } from '../../src/state/peer-report';
import {
  checkPeers,
  MAX_BUCKETS,
  USAGE_FACTOR,
  type PeerBounds,
  type PeerModelBounds,
} from '../../src/state/redis/peer-checks';
import { encodeReading, encodeUsage } from '../../src/state/redis/redis-protocol';
import type { RawSyncReply } from '../../src/state/redis/sync-script';

/** An epoch-aligned second, far from 0 like real clocks. */
const T0 = 1_700_000_040_000;
const S = T0 / 1000;
const FIELD = 'east:gpt-4o';
const LIMITS: PeerModelBounds = {
  deployment: 'east',
  model: 'gpt-4o',
  tokens: 10_000,
  requests: 100,
  input: 0,
  output: 0,
};
const bounds = (over: Partial<PeerBounds> = {}): PeerBounds => ({
  now: T0 + 500,
  windowMs: 60_000,
  skewMs: 5_000,
  maxCooldown: 86_400_000,
  models: new Map([[FIELD, LIMITS]]),
  ...over,
});
const raw = (over: Partial<RawSyncReply> = {}): RawSyncReply => ({
  usage: [],
  cooling: [],
  skipped: [],
  ...over,
});
const honest = (models: Record<string, unknown[]> = { [FIELD]: [S, 300, 2] }, readings = {}) =>
  `${T0} ${JSON.stringify({ b: 1000, m: models, r: readings })}`;
const reading = {
  sentAt: T0 - 1_000,
  at: T0 - 900,
  tokens: 150,
  tokensEnd: T0 + 20_000,
  requestsEnd: 0,
  reading: { tokens: { limit: 10_000, remaining: 6_000 }, requests: { limit: 100, remaining: 40 } },
};
const usageOf = (report: PeerReport) => report.models.get('east')?.get('gpt-4o')?.usage;

describe('checkPeers (values read from a shared store)', () => {
  it('keeps honest usage and readings, without the readings’ limits', () => {
    const { report, problems } = checkPeers(
      raw({ usage: [honest(undefined, { [FIELD]: encodeReading(reading) })] }),
      bounds(),
    );
    expect(problems.size).toBe(0);
    expect(usageOf(report)).toEqual({
      tokens: 300,
      requests: 2,
      recentRequests: 2,
      spans: [T0, T0 + 1000, 300, 2],
    });
    expect(report.models.get('east')!.get('gpt-4o')!.reading).toEqual({
      ...reading,
      reading: { tokens: { remaining: 6_000 }, requests: { remaining: 40 } },
    });
    expect(report.usage && report.cooldowns).toBe(true);
  });

  it.each<[string, unknown[], string]>([
    ['scaled ×10⁶', [S, 300e6, 2e6], 'usage-bound'],
    ['negated', [S, -300, -2], 'usage-count'],
    ['null', [S, null, 2], 'usage-count'],
    ['a string', [S, '300', 2], 'usage-count'],
    ['a fractional index', [S + 0.5, 300, 2], 'usage-count'],
    ['not triples', [S, 300], 'usage-count'],
    ['ten years ahead', [S + 10 * 365 * 86_400, 300, 2], 'usage-future'],
    [
      'too many buckets',
      Array.from({ length: MAX_BUCKETS + 1 }, (_, i) => [S - i, 1, 1]).flat(),
      'usage-count',
    ],
  ])('skips usage %s, and keeps the others’', (_, flat, problem) => {
    const { report, problems } = checkPeers(
      raw({ usage: [honest({ [FIELD]: flat }), honest()] }),
      bounds(),
    );
    expect([...problems.keys()]).toEqual([problem]);
    expect(usageOf(report)?.tokens).toBe(300);
  });

  it('bounds usage by the limit known here, with a generous factor, or a fixed bound without one', () => {
    const at = (tokens: number, requests: number, limits = LIMITS) =>
      checkPeers(
        raw({ usage: [honest({ [FIELD]: [S, tokens, requests] })] }),
        bounds({ models: new Map([[FIELD, limits]]) }),
      ).problems;
    expect(at(USAGE_FACTOR * 10_000, USAGE_FACTOR * 100).size).toBe(0);
    expect([...at(USAGE_FACTOR * 10_000 + 1, 1).keys()]).toEqual(['usage-bound']);
    expect([...at(1, USAGE_FACTOR * 100 + 1).keys()]).toEqual(['usage-bound']);
    const unknown = { ...LIMITS, tokens: 0, requests: 0 };
    expect(at(5e8, 1e6, unknown).size).toBe(0);
    expect([...at(2e9, 1, unknown).keys()]).toEqual(['usage-bound']);
  });

  it.each<[string, string, string]>([
    ['garbage', 'lorem ipsum', 'usage-unreadable'],
    ['half a JSON', `${T0} {"b":`, 'usage-unreadable'],
    ['no time', `soon {"b":1000,"m":{}}`, 'usage-time'],
    [
      'written ten years ahead',
      honest().replace(String(T0), String(T0 + 10 * 365 * 86_400_000)),
      'usage-time',
    ],
    ['buckets of a negative size', `${T0} {"b":-1000,"m":{}}`, 'usage-bucket-size'],
    ['buckets longer than the window', `${T0} {"b":120000,"m":{}}`, 'usage-bucket-size'],
  ])('skips a value that is %s', (_, value, problem) => {
    const { report, problems } = checkPeers(raw({ usage: [value, honest()] }), bounds());
    expect([...problems.keys()]).toEqual([problem]);
    expect(usageOf(report)?.tokens).toBe(300);
  });

  it.each<[string, (flat: number[]) => unknown[], string]>([
    ['ten years ahead', (f) => [f[0]! + 3e11, f[1]! + 3e11, ...f.slice(2)], 'reading-time'],
    ['sent before the window', (f) => [f[0]! - 120_000, ...f.slice(1)], 'reading-time'],
    [
      'with a window end ten years ahead',
      (f) => [...f.slice(0, 3), f[3]! + 3e11, ...f.slice(4)],
      'reading-time',
    ],
    ['negated', (f) => [...f.slice(0, 5), ...f.slice(5).map((n) => -n)], 'reading-count'],
    ['scaled ×10⁶', (f) => [...f.slice(0, 2), f[2]! * 1e6, ...f.slice(3)], 'reading-count'],
    [
      'with a remaining beyond the limit known',
      (f) => [...f.slice(0, 6), 1e9, ...f.slice(7)],
      'reading-count',
    ],
    ['with nulls', (f) => f.map(() => null), 'reading-unreadable'],
    ['short', (f) => f.slice(0, 5), 'reading-unreadable'],
  ])('skips a reading %s', (_, forge, problem) => {
    const { report, problems } = checkPeers(
      raw({ usage: [honest(undefined, { [FIELD]: forge(encodeReading(reading)) })] }),
      bounds(),
    );
    expect([...problems.keys()]).toEqual([problem]);
    expect(report.models.get('east')!.get('gpt-4o')!.reading).toBeUndefined();
    expect(usageOf(report)?.tokens).toBe(300);
  });

  it('never passes on a limit: a reading of limit 1 keeps only what it says is left', () => {
    const forged = { ...reading, reading: { tokens: { limit: 1, remaining: 1 } } };
    const { report } = checkPeers(
      raw({ usage: [honest(undefined, { [FIELD]: encodeReading(forged) })] }),
      bounds(),
    );
    expect(report.models.get('east')!.get('gpt-4o')!.reading!.reading).toEqual({
      tokens: { remaining: 1 },
    });
    const limitsOnly = { ...reading, reading: { tokens: { limit: 1 } } };
    const only = checkPeers(
      raw({ usage: [honest(undefined, { [FIELD]: encodeReading(limitsOnly) })] }),
      bounds(),
    );
    expect(only.report.models.get('east')!.get('gpt-4o')!.reading).toBeUndefined();
    expect(only.problems.size).toBe(0);
  });

  it('reads cooldowns that are times; flags one beyond maxCooldown; ignores expired ones and other models', () => {
    const b = bounds();
    const check = (value: string) =>
      checkPeers(
        raw({
          cooling: [
            [FIELD, value],
            ['other:model', 'x'],
          ],
        }),
        b,
      );
    const ok = check(String(b.now + 30_000));
    expect(ok.report.models.get('east')!.get('gpt-4o')!.cooldownUntil).toBe(b.now + 30_000);
    expect(ok.problems.size).toBe(0);
    const long = check(String(b.now + 1000 * 86_400_000));
    expect([...long.problems.keys()]).toEqual(['cooldown-cap']);
    expect(long.report.models.get('east')!.get('gpt-4o')!.cooldownUntil).toBe(
      b.now + 1000 * 86_400_000,
    );
    for (const bad of ['garbage', 'null', '', '-5', '1e20', 'Infinity', '0x10']) {
      const r = check(bad);
      expect([...r.problems.keys()]).toEqual(['cooldown-unreadable']);
      expect(r.report.models.get('east')).toBeUndefined();
    }
    expect(check('1').report.models.get('east')).toBeUndefined(); // long over
  });

  it('names what the script skipped, and knows when the cooldowns could not be read', () => {
    const { report, problems } = checkPeers(
      raw({
        skipped: ['usage-type:string', 'cooldowns-type:list', 'usage-fields', 'usage-length'],
      }),
      bounds(),
    );
    expect([...problems.keys()].sort()).toEqual(['key-type', 'too-long', 'too-many-fields']);
    expect(report.cooldowns).toBe(false);
    expect(report.usage).toBe(true);
  });

  it('ignores models this instance does not serve, and reads no usage for a cooldown-only sync', () => {
    const value = encodeUsage({
      at: T0,
      bucketMs: 1000,
      models: { 'west:gpt-4o': [S, -1, null as unknown as number] },
    });
    expect(checkPeers(raw({ usage: [value] }), bounds()).problems.size).toBe(0);
    const { report, problems } = checkPeers(raw({ usage: ['garbage'] }), bounds(), false);
    expect(problems.size).toBe(0);
    expect(report.usage).toBe(false);
  });
});

describe('peerFold', () => {
  const rig = () => {
    let now = T0;
    const state = new ModelState({ name: 'gpt-4o', tpm: 10_000, rpm: 100 }, 'east', () => now);
    const target = { deployments: new Map([['east', { models: new Map([['gpt-4o', state]]) }]]) };
    const fold = peerFold(target, { maxCooldown: 60_000 });
    const report = (cooldownUntil?: number, usage?: PeerReport['models']): PeerReport => ({
      at: now,
      usage: usage !== undefined,
      cooldowns: true,
      models:
        usage ??
        new Map([
          ['east', new Map([['gpt-4o', cooldownUntil === undefined ? {} : { cooldownUntil }]])],
        ]),
    });
    return { state, fold, report, tick: (ms: number) => (now += ms), now: () => now };
  };

  it('caps a cooldown from the store at maxCooldown from when it was first seen, and never renews the cap', () => {
    const { state, fold, report, tick, now } = rig();
    const forever = now() + 1000 * 86_400_000;
    fold(report(forever));
    expect(state.cooldownRemaining).toBe(60_000);
    tick(30_000);
    fold(report(forever));
    expect(state.cooldownRemaining).toBe(30_000);
    tick(30_000);
    fold(report(forever));
    expect(state.isCooling()).toBe(false);
  });

  it('ends a cooldown taken from the store when the store no longer holds it; keeps its own', () => {
    const { state, fold, report, now } = rig();
    fold(report(now() + 20_000));
    expect(state.isCooling()).toBe(true);
    fold(report(undefined));
    expect(state.isCooling()).toBe(false);
    state.markDown(10_000, 'connection');
    fold(report(now() + 5_000)); // shorter than its own: its own stays
    fold(report(undefined));
    expect(state.cooldownRemaining).toBe(10_000);
  });

  it('follows the store when the value it took there changes, shorter or not', () => {
    const { state, fold, report, now } = rig();
    fold(report(now() + 50_000));
    fold(report(now() + 10_000));
    expect(state.cooldownRemaining).toBe(10_000);
  });

  it('sets the shared usage and clears it when the peers report none', () => {
    const { state, fold, report } = rig();
    state.quota.slide(60_000);
    const usage = { tokens: 300, requests: 2, recentRequests: 2, spans: [T0 - 1000, T0, 300, 2] };
    fold(report(undefined, new Map([['east', new Map([['gpt-4o', { usage }]])]])));
    expect([state.tpmUsage, state.rpmUsage]).toEqual([300, 2]);
    fold(report(undefined, new Map()));
    expect([state.tpmUsage, state.rpmUsage]).toEqual([0, 0]);
    expect([state.quota.limits.tpm.value, state.quota.limits.rpm.value]).toEqual([10_000, 100]);
  });
});

import {
  createSwitchboard,
  type OpenAIConfig,
  type Switchboard,
  type SwitchboardOptions,
} from 'nestjs-switchboard';
import type { Deployment } from 'nestjs-switchboard/extend';
import { openaiDeployments } from '../support/configs';
import { FakeClock, seeded } from '../support/random';

const MODEL = 'gpt-4o-mini';
const stateOf = (d: Deployment) => d.models.get(MODEL)!;

/** `ptu0..` at priority 0 and `payg0..` at priority 1, 60 rpm each; selection only. */
function tiered(ptu: number, payg: number, patch: (d: OpenAIConfig) => OpenAIConfig = (d) => d) {
  const quota = { tpm: 0, rpm: 60 };
  return [
    ...openaiDeployments(ptu, MODEL, quota).map((d, i) => ({ ...d, name: `ptu${i}`, priority: 0 })),
    ...openaiDeployments(payg, MODEL, quota).map((d, i) => ({
      ...d,
      name: `payg${i}`,
      priority: 1,
    })),
  ].map(patch);
}

describe('priority tiers and weights (selection)', () => {
  let sb: Switchboard;
  const clock = new FakeClock();
  afterEach(() => sb?.close());

  const board = (
    options: Partial<SwitchboardOptions> & Pick<SwitchboardOptions, 'deployments'>,
  ) => {
    sb = createSwitchboard({ random: seeded(3), clock: clock.now, ratelimitWindow: 0, ...options });
    return sb;
  };
  const tally = (n: number, pick = () => sb.selectDeployment({ model: MODEL })) => {
    const counts: Record<string, number> = {};
    for (let i = 0; i < n; i++) {
      const d = pick();
      counts[d.name] = (counts[d.name] ?? 0) + 1;
    }
    return counts;
  };

  it('sends everything to the most preferred tier while it has room, whatever its utilization', () => {
    board({ deployments: tiered(2, 2) });
    const d = (name: string) => sb.deployments.get(name)!;
    // PTU nearly full, PAYG idle: the PTU tier is kept full, not merely used.
    stateOf(d('ptu0')).spend(0, 58);
    stateOf(d('ptu1')).spend(0, 58);
    const counts = tally(200);
    expect(Object.keys(counts).sort()).toEqual(['ptu0', 'ptu1']);
  });

  it('spills to the next tier only when the first has no room, and comes back when it has', () => {
    board({ deployments: tiered(2, 2) });
    const d = (name: string) => sb.deployments.get(name)!;
    stateOf(d('ptu0')).spend(0, 60);
    stateOf(d('ptu1')).markDown(5_000);
    const spilled = tally(200);
    expect(Object.keys(spilled).sort()).toEqual(['payg0', 'payg1']);
    expect(spilled.payg0).toBeGreaterThan(60);
    expect(spilled.payg1).toBeGreaterThan(60);
    clock.advance(5_001);
    expect(tally(50)).toEqual({ ptu1: 50 });
  });

  it('moves down the tiers in order, three of them, and takes best effort from all when none has room', () => {
    const deployments = [
      ...tiered(1, 1),
      { ...openaiDeployments(1, MODEL)[0]!, name: 'spare', priority: 7 },
    ];
    board({ deployments });
    const d = (name: string) => sb.deployments.get(name)!;
    expect(sb.registry.tiers.get(MODEL)!.map((t) => t.map((x) => x.name))).toEqual([
      ['ptu0'],
      ['payg0'],
      ['spare'],
    ]);
    stateOf(d('payg0')).markDown();
    expect(tally(20)).toEqual({ ptu0: 20 });
    stateOf(d('ptu0')).markDown();
    expect(tally(20)).toEqual({ spare: 20 });
    stateOf(d('payg0')).markUp();
    expect(tally(20)).toEqual({ payg0: 20 });
    stateOf(d('payg0')).spend(0, 60);
    stateOf(d('spare')).markDown();
    // None has room: best effort prefers the one over its quota to those cooling down.
    expect(tally(20)).toEqual({ payg0: 20 });
  });

  it('fails over down the tiers: untried deployments first, most preferred tier first', () => {
    board({ deployments: tiered(2, 1) });
    const d = (name: string) => sb.deployments.get(name)!;
    const tried = new Set<Deployment>([d('ptu0')]);
    expect(sb.picker.select(MODEL, undefined, tried).name).toBe('ptu1');
    tried.add(d('ptu1'));
    expect(sb.picker.select(MODEL, undefined, tried).name).toBe('payg0');
    tried.add(d('payg0'));
    // Everything tried: a healthy one again, the preferred tier first.
    expect(['ptu0', 'ptu1']).toContain(sb.picker.select(MODEL, undefined, tried).name);
  });

  it('keeps a session on its lower-tier deployment while it has room, even after the PTU recovers', () => {
    board({ deployments: tiered(1, 2) });
    const d = (name: string) => sb.deployments.get(name)!;
    stateOf(d('ptu0')).markDown(1_000);
    const home = sb.selectDeployment({ model: MODEL, sessionId: 's' }).name;
    expect(home).toMatch(/^payg/);
    clock.advance(1_001);
    expect(sb.selectDeployment({ model: MODEL }).name).toBe('ptu0');
    for (let i = 0; i < 10; i++) {
      expect(sb.selectDeployment({ model: MODEL, sessionId: 's' }).name).toBe(home);
    }
    // Its deployment full: the session moves, to the most preferred tier with room.
    stateOf(d(home)).spend(0, 60);
    expect(sb.selectDeployment({ model: MODEL, sessionId: 's' }).name).toBe('ptu0');
  });

  it('gives weights 3:1 a 3:1 share within ±20 % over 400 selections with unlimited quotas', () => {
    const [a, b] = openaiDeployments(2, MODEL, { tpm: 0, rpm: 0 });
    board({
      deployments: [
        { ...a!, weight: 3 },
        { ...b!, weight: 1 },
      ],
    });
    const counts = tally(400);
    const ratio = counts.d0! / counts.d1!;
    expect(ratio).toBeGreaterThanOrEqual(2.4);
    expect(ratio).toBeLessThanOrEqual(3.6);
  });

  it('follows weights within a tier and not across tiers; a model entry overrides its deployment', () => {
    const deployments = tiered(3, 1, (d) =>
      d.name === 'ptu0'
        ? { ...d, weight: 5, models: [{ name: MODEL, tpm: 0, rpm: 0, weight: 2 }] }
        : { ...d, models: [{ name: MODEL, tpm: 0, rpm: 0 }], weight: d.name === 'payg0' ? 100 : 1 },
    );
    board({ deployments, random: seeded(19) });
    const counts = tally(4000);
    expect(counts.payg0).toBeUndefined();
    // ptu0 : ptu1 : ptu2 = 2 : 1 : 1
    expect(counts.ptu0! / 2000).toBeGreaterThan(0.9);
    expect(counts.ptu0! / 2000).toBeLessThan(1.1);
    expect(counts.ptu1! / 1000).toBeGreaterThan(0.85);
    expect(counts.ptu2! / 1000).toBeGreaterThan(0.85);
  });

  it('lets utilization decide between weighted deployments when quotas are set', () => {
    const [a, b] = openaiDeployments(2, MODEL, { tpm: 0, rpm: 100 });
    board({
      deployments: [
        { ...a!, weight: 3 },
        { ...b!, weight: 1 },
      ],
    });
    // Charge each pick as a call would: the heavier one cannot take more than its quota.
    const counts = tally(200, () => {
      const d = sb.selectDeployment({ model: MODEL });
      stateOf(d).spend(0, 1);
      return d;
    });
    expect(counts.d0! + counts.d1!).toBe(200);
    expect(counts.d0).toBeLessThanOrEqual(100);
    expect(counts.d1).toBeLessThanOrEqual(100);
  });

  it('samples a large tier instead of scanning it: a weighted pool of 2 000 reads few states per call', () => {
    const deployments = openaiDeployments(2_000, MODEL, { tpm: 0, rpm: 0 }).map((d, i) => ({
      ...d,
      weight: 1 + (i % 4),
      priority: i < 1_000 ? 0 : 1,
    }));
    board({ deployments });
    let reads = 0;
    for (const d of sb.deployments.values()) {
      const s = stateOf(d);
      const original = s.isHealthy.bind(s);
      s.isHealthy = () => {
        reads++;
        return original();
      };
    }
    for (let i = 0; i < 100; i++) sb.selectDeployment({ model: MODEL });
    expect(reads).toBeLessThanOrEqual(100 * 3);
  });
});

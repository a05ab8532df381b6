import {
  createSwitchboard,
  Selector,
  TwoRandomChoices,
  type Switchboard,
} from 'nestjs-switchboard';
import type { Deployment, Gate, ModelState } from 'nestjs-switchboard/extend';
import { openaiDeployments } from '../support/configs';
import { FakeClock, seeded } from '../support/random';

const MODEL = 'gpt-4o-mini';

/** A gate that admits what `inner` admits and counts how often it was asked. */
function counting(inner: (state: ModelState, d: Deployment) => boolean) {
  const gate = {
    asked: 0,
    admits(state: ModelState, d: Deployment) {
      gate.asked++;
      return inner(state, d);
    },
  };
  return gate;
}

describe('Selector.pick over a gate', () => {
  const clock = new FakeClock();
  let sb: Switchboard | undefined;
  afterEach(() => sb?.close());

  const pool = (n: number): Deployment[] => {
    sb = createSwitchboard({
      deployments: openaiDeployments(n),
      clock: clock.now,
      ratelimitWindow: 0,
    });
    return [...sb.deployments.values()];
  };

  it('a selector that implements only select() is given the admitted candidates, two or more', () => {
    const seen: string[][] = [];
    class First extends Selector {
      select(_model: string, candidates: readonly Deployment[]): Deployment {
        seen.push(candidates.map((d) => d.name));
        return candidates[0]!;
      }
    }
    const all = pool(4);
    const selector = new First();
    const odd: Gate = { admits: (_s, d) => Number(d.name.slice(1)) % 2 === 1 };
    expect(selector.pick(MODEL, all, odd)?.name).toBe('d1');
    expect(seen).toEqual([['d1', 'd3']]);
    // One admitted: taken as it is, select() is not asked; none: undefined.
    expect(selector.pick(MODEL, all, { admits: (_s, d) => d.name === 'd2' })?.name).toBe('d2');
    expect(selector.pick(MODEL, all, { admits: () => false })).toBeUndefined();
    expect(seen).toHaveLength(1);
  });

  it('two random choices asks the gate a bounded number of times, whatever the pool size', () => {
    const selector = new TwoRandomChoices({ random: seeded(3) });
    for (const n of [10, 2000]) {
      const all = pool(n);
      const gate = counting(() => true);
      for (let i = 0; i < 100; i++) expect(selector.pick(MODEL, all, gate)).toBeDefined();
      // Two draws per pick when every deployment is open, at 10 as at 2000.
      expect(gate.asked).toBe(200);
      void sb!.close();
    }
  });

  it('two random choices never returns what the gate refuses, and scans only when samples keep coming up closed', () => {
    const selector = new TwoRandomChoices({ random: seeded(5) });
    const all = pool(1000);
    const open = new Set([all[17]!, all[923]!]);
    const gate = counting((_s, d) => open.has(d));
    for (let i = 0; i < 20; i++) expect(open.has(selector.pick(MODEL, all, gate)!)).toBe(true);
    const none = counting(() => false);
    expect(selector.pick(MODEL, all, none)).toBeUndefined();
    // Eight samples, then one scan of the pool.
    expect(none.asked).toBe(8 + 1000);
  });

  it('compares the two it draws on the load metric, apart from the draw', () => {
    class Busiest extends TwoRandomChoices {
      protected override load(state: ModelState): number {
        return -state.util;
      }
    }
    const all = pool(2);
    all[0]!.models.get(MODEL)!.spend(0, 30);
    const gate: Gate = { admits: () => true };
    const selector = new Busiest({ random: seeded(9) });
    for (let i = 0; i < 20; i++) expect(selector.pick(MODEL, all, gate)).toBe(all[0]);
  });
});

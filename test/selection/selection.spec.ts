import {
  createSwitchboard,
  Selector,
  SwitchboardError,
  TwoRandomChoices,
  type Switchboard,
} from 'nestjs-switchboard';
import type { Deployment } from 'nestjs-switchboard/extend';
import { ModelState } from '../../src/registry/model-state';
import { RoomGate } from '../../src/selection/pick';
import { openaiDeployments } from '../support/configs';
import { FakeClock, seeded } from '../support/random';

const MODEL = 'gpt-4o-mini';
const stateOf = (d: Deployment) => d.models.get(MODEL)!;

describe('selection', () => {
  let sb: Switchboard;
  const clock = new FakeClock();
  afterEach(() => sb?.close());

  const board = (n: number, extra: Partial<Parameters<typeof createSwitchboard>[0]> = {}) => {
    sb = createSwitchboard({
      deployments: openaiDeployments(n),
      random: seeded(7),
      clock: clock.now,
      ratelimitWindow: 0,
      ...extra,
    });
    return sb;
  };

  it('takes the less utilized of the two deployments it draws', () => {
    board(2);
    const [a, b] = [...sb.deployments.values()];
    stateOf(a!).spend(0, 30);
    for (let i = 0; i < 50; i++) expect(sb.selectDeployment({ model: MODEL }).name).toBe(b!.name);
  });

  it('never picks an unhealthy deployment while a healthy one serves the model', () => {
    board(10);
    const all = [...sb.deployments.values()];
    all.slice(0, 9).forEach((d) => stateOf(d).markDown());
    for (let i = 0; i < 50; i++) expect(sb.selectDeployment({ model: MODEL })).toBe(all[9]);
    all[9]!.models.get(MODEL)!.spend(0, 300); // saturated: now none is healthy
    stateOf(all[0]!).markUp();
    stateOf(all[0]!).spend(0, 300);
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) seen.add(sb.selectDeployment({ model: MODEL }).name);
    // best effort spreads over the saturated ones and skips those cooling down
    expect([...seen].sort()).toEqual(['d0', 'd9']);
  });

  it('draws uniformly among the healthy ones (as if from the healthy list)', () => {
    board(6);
    const all = [...sb.deployments.values()];
    stateOf(all[0]!).markDown();
    stateOf(all[1]!).markDown();
    const counts = new Map<string, number>();
    for (let i = 0; i < 4000; i++) {
      const d = sb.selectDeployment({ model: MODEL });
      counts.set(d.name, (counts.get(d.name) ?? 0) + 1);
    }
    expect(counts.has('d0') || counts.has('d1')).toBe(false);
    for (const name of ['d2', 'd3', 'd4', 'd5']) {
      expect(counts.get(name)).toBeGreaterThan(800);
      expect(counts.get(name)).toBeLessThan(1200);
    }
  });

  it('does not scan the pool on every call: work per call stays flat from 10 to 10 000 deployments', () => {
    // A deployment checked is one the model answered for, or its hot row did.
    const checks = (n: number) => {
      board(n);
      const asked = jest.spyOn(ModelState.prototype, 'isHealthy');
      const read = jest.spyOn(RoomGate.prototype, 'admitsRow');
      for (let i = 0; i < 100; i++) sb.selectDeployment({ model: MODEL });
      const calls =
        asked.mock.calls.length + read.mock.results.filter((r) => (r.value as number) >= 0).length;
      asked.mockRestore();
      read.mockRestore();
      void sb.close();
      return calls;
    };
    const small = checks(10);
    const large = checks(10_000);
    expect(large).toBeLessThanOrEqual(small * 1.5);
    expect(large / 100).toBeLessThan(5);
  });

  it('reads a drawn model from its hot row while that holds, and asks the model when room depends on calls in flight', () => {
    const draws = (extra: Partial<Parameters<typeof createSwitchboard>[0]> = {}) => {
      board(1_000, extra);
      // Every row kept once: each model answered a draw.
      for (const d of sb.deployments.values()) void stateOf(d).util;
      const asked = jest.spyOn(ModelState.prototype, 'isHealthy');
      const util = jest.spyOn(ModelState.prototype, 'util', 'get');
      for (let i = 0; i < 100; i++) sb.selectDeployment({ model: MODEL });
      const n = asked.mock.calls.length + util.mock.calls.length;
      asked.mockRestore();
      util.mockRestore();
      void sb.close();
      return n;
    };
    expect(draws()).toBe(0);
    // With a cap, room also needs a free slot, which the row does not hold.
    const capped = openaiDeployments(1_000).map((d) => ({ ...d, maxInFlight: 4 }));
    expect(draws({ deployments: capped })).toBeGreaterThanOrEqual(200);
  });

  it('scans when samples keep coming up unhealthy, and still finds the one healthy deployment', () => {
    board(1000);
    const all = [...sb.deployments.values()];
    all.forEach((d, i) => i !== 617 && stateOf(d).markDown());
    expect(sb.selectDeployment({ model: MODEL })).toBe(all[617]);
  });

  it('raises a SwitchboardError for a model no deployment serves', () => {
    board(2);
    expect(() => sb.selectDeployment({ model: 'gpt-5' })).toThrow(SwitchboardError);
    expect(() => sb.selectDeployment({ model: 'gpt-5' })).toThrow(
      /No deployments available for gpt-5/,
    );
  });

  describe('sessions', () => {
    it('keeps a session on its deployment, moves it when marked down, and keeps the new one', () => {
      board(3);
      const first = sb.selectDeployment({ model: MODEL, sessionId: 's1' });
      for (let i = 0; i < 20; i++) {
        // make the session's deployment the busiest: affinity still wins
        stateOf(first).spend(100, 1);
        expect(sb.selectDeployment({ model: MODEL, sessionId: 's1' })).toBe(first);
      }
      stateOf(first).markDown();
      const second = sb.selectDeployment({ model: MODEL, sessionId: 's1' });
      expect(second).not.toBe(first);
      stateOf(first).markUp();
      for (let i = 0; i < 10; i++) {
        expect(sb.selectDeployment({ model: MODEL, sessionId: 's1' })).toBe(second);
      }
    });

    it('reselects without error when the session deployment lacks the requested model', () => {
      const deployments = openaiDeployments(2);
      deployments.push({
        provider: 'openai',
        name: 'mini-only',
        baseURL: 'http://127.0.0.1:2/x/',
        apiKey: 'k',
        models: [{ name: 'gpt-4.1-nano' }],
      });
      sb = createSwitchboard({ deployments, ratelimitWindow: 0 });
      expect(sb.selectDeployment({ model: 'gpt-4.1-nano', sessionId: 's' }).name).toBe('mini-only');
      const moved = sb.selectDeployment({ model: MODEL, sessionId: 's' });
      expect(moved.name).not.toBe('mini-only');
      expect(sb.selectDeployment({ model: MODEL, sessionId: 's' })).toBe(moved);
    });

    it('bounds the session map by maxSessions', () => {
      board(3, { maxSessions: 50 });
      for (let i = 0; i < 1000; i++) sb.selectDeployment({ model: MODEL, sessionId: `s${i}` });
      expect(sb.registry.sessions.size).toBe(50);
    });
  });

  describe('custom selectors', () => {
    class Last extends Selector {
      calls = 0;
      select(_model: string, candidates: readonly Deployment[]): Deployment {
        this.calls++;
        return candidates[candidates.length - 1]!;
      }
    }

    it('is asked only with healthy candidates, and not at all when one is left', () => {
      const selector = new Last();
      board(4, { selector });
      const all = [...sb.deployments.values()];
      stateOf(all[3]!).markDown();
      expect(sb.selectDeployment({ model: MODEL }).name).toBe('d2');
      stateOf(all[1]!).markDown();
      stateOf(all[2]!).markDown();
      const calls = selector.calls;
      expect(sb.selectDeployment({ model: MODEL }).name).toBe('d0');
      expect(selector.calls).toBe(calls);
    });

    it('accepts a selector class', () => {
      sb = createSwitchboard({ deployments: openaiDeployments(3), selector: Last });
      expect(sb.selector).toBeInstanceOf(Last);
      expect(sb.selectDeployment({ model: MODEL }).name).toBe('d2');
    });

    it('rejects a selector that answers with a deployment it was not offered', () => {
      const stray = createSwitchboard({ deployments: openaiDeployments(1) });
      class Stray extends Selector {
        select(): Deployment {
          return [...stray.deployments.values()][0]!;
        }
      }
      board(3, { selector: new Stray() });
      expect(() => sb.selectDeployment({ model: MODEL })).toThrow(/not one of the candidates/);
      void stray.close();
    });
  });

  it('TwoRandomChoices with jitter still prefers a clearly less utilized deployment', () => {
    board(2, { selector: new TwoRandomChoices({ random: seeded(3), jitter: 0.01 }) });
    const [a] = [...sb.deployments.values()];
    stateOf(a!).spend(0, 30); // 0.1 ahead: more than the jitter
    for (let i = 0; i < 50; i++) expect(sb.selectDeployment({ model: MODEL }).name).toBe('d1');
  });
});

describe('best effort', () => {
  it('prefers a deployment over its quota to one cooling down after a 429', async () => {
    const sb = createSwitchboard({
      deployments: openaiDeployments(3),
      random: seeded(5),
      ratelimitWindow: 0,
    });
    const [a, b, c] = [...sb.deployments.values()];
    stateOf(a!).markDown(60_000);
    stateOf(b!).markDown(60_000);
    stateOf(c!).spend(0, 330); // 1.1 by our own count: unhealthy, but not known to refuse
    for (let i = 0; i < 20; i++) expect(sb.selectDeployment({ model: MODEL })).toBe(c);
    stateOf(c!).markDown(60_000);
    const seen = new Set<string>();
    for (let i = 0; i < 60; i++) seen.add(sb.selectDeployment({ model: MODEL }).name);
    expect(seen.size).toBe(3);
    await sb.close();
  });
});

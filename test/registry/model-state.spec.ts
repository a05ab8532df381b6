import { ModelState } from '../../src/registry/model-state';
import { FakeClock } from '../support/random';

describe('ModelState', () => {
  const clock = new FakeClock();
  const make = (tpm?: number, rpm?: number, cooldown?: number) =>
    new ModelState({ name: 'gpt-4o-mini', tpm, rpm, cooldown }, 'east', clock.now);

  it('reports utilization as the larger of the tpm and rpm shares', () => {
    const s = make(1000, 10);
    s.spend(100, 1);
    expect(s.util).toBeCloseTo(0.1);
    s.spend(500, 0);
    expect(s.util).toBeCloseTo(0.6);
    expect(s.tpmUsage).toBe(600);
    expect(s.rpmUsage).toBe(1);
  });

  it('treats a zero or absent quota as unlimited', () => {
    const s = make(0, undefined);
    s.spend(1_000_000, 1000);
    expect(s.util).toBe(0);
    expect(s.isHealthy()).toBe(true);
  });

  it('is unhealthy at full utilization and while cooling', () => {
    const s = make(100, 0);
    s.spend(100);
    expect(s.util).toBe(1);
    expect(s.isHealthy()).toBe(false);
    s.resetUsage();
    expect(s.isHealthy()).toBe(true);
    s.markDown(5000);
    expect(s.isCooling()).toBe(true);
    expect(s.util).toBe(1);
    expect(s.cooldownRemaining).toBe(5000);
    clock.advance(4999);
    expect(s.isHealthy()).toBe(false);
    clock.advance(1);
    expect(s.isCooling()).toBe(false);
    expect(s.isHealthy()).toBe(true);
  });

  it('uses the configured cooldown by default and keeps the longer of two', () => {
    const s = make(0, 0, 2000);
    s.markDown();
    expect(s.cooldownRemaining).toBe(2000);
    s.markDown(500);
    expect(s.cooldownRemaining).toBe(2000);
    s.markDown(9000);
    expect(s.cooldownRemaining).toBe(9000);
    s.markUp();
    expect(s.isCooling()).toBe(false);
  });

  it('never lets usage go below zero when a refund crosses a reset', () => {
    const s = make(1000, 10);
    s.spend(50, 1);
    s.resetUsage();
    s.spend(-50);
    expect(s.tpmUsage).toBe(0);
    expect(Number.isNaN(s.util)).toBe(false);
  });

  it('tells its listener about mark-downs and mark-ups', () => {
    const s = make();
    const events: string[] = [];
    s.listener = (_state, e) => events.push(e.type);
    s.markUp(); // not cooling: nothing to say
    s.markDown(100);
    s.markUp();
    expect(events).toEqual(['down', 'up']);
  });
});

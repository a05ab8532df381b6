import { ModelState } from '../../src/registry/model-state';
import { FakeClock } from '../support/random';

describe('ModelState sliding window', () => {
  const make = (clock: FakeClock, tpm = 1000, rpm = 60) => {
    const s = new ModelState({ name: 'gpt-4o-mini', tpm, rpm }, 'east', clock.now);
    s.quota.slide(60_000, 60);
    return s;
  };

  it('forgets usage once it is older than the window, not before', () => {
    const clock = new FakeClock();
    const s = make(clock);
    s.spend(300, 1);
    clock.advance(30_000);
    s.spend(200, 1);
    expect(s.tpmUsage).toBe(500);
    clock.advance(30_000); // the first charge is 60 s old: still inside the covered window
    expect(s.tpmUsage).toBe(500);
    clock.advance(1_000);
    expect(s.tpmUsage).toBe(200);
    expect(s.rpmUsage).toBe(1);
    clock.advance(61_000);
    expect(s.tpmUsage).toBe(0);
    expect(s.util).toBe(0);
  });

  it('weighs the requests of the last sixth of the window against rpm / 6', () => {
    const clock = new FakeClock();
    const s = make(clock, 0, 60);
    for (let i = 0; i < 9; i++) s.spend(0, 1);
    expect(s.util).toBeCloseTo(0.9);
    expect(s.isHealthy()).toBe(true);
    s.spend(0, 1);
    expect(s.util).toBe(1); // 10 requests in 10 s: Azure answers the 11th with a 429
    expect(s.isHealthy()).toBe(false);
    clock.advance(12_000);
    expect(s.util).toBeCloseTo(10 / 60); // the burst is over, the minute still counts them
  });

  it('takes refunds off the newest charges and never goes below zero', () => {
    const clock = new FakeClock();
    const s = make(clock);
    s.spend(100, 1);
    clock.advance(5_000);
    s.spend(-100);
    expect(s.tpmUsage).toBe(0);
    clock.advance(120_000);
    expect(s.tpmUsage).toBe(0);
    s.spend(-50);
    expect(s.tpmUsage).toBe(0);
  });

  it('keeps resetUsage(): everything in the window is forgotten', () => {
    const clock = new FakeClock();
    const s = make(clock);
    s.spend(400, 4);
    s.resetUsage();
    expect(s.tpmUsage).toBe(0);
    expect(s.rpmUsage).toBe(0);
    expect(s.util).toBe(0);
    clock.advance(70_000);
    s.spend(10, 1);
    expect(s.tpmUsage).toBe(10);
  });
});

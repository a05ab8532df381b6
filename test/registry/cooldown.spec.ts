import { createSwitchboard, type SwitchboardOptions } from 'nestjs-switchboard';
import { ConsecutiveBreaker } from '../../src/registry/consecutive-breaker';
import { Cooldown } from '../../src/registry/cooldown';
import { DEFAULT_MAX_COOLDOWN } from '../../src/runtime/upstream-numbers';
import type { ModelEvent } from '../../src/registry/model-event';
import { ModelState } from '../../src/registry/model-state';
import { openaiDeployments } from '../support/configs';
import { FakeClock } from '../support/random';

const DAY = 86_400_000;

describe('maxCooldown caps every cooldown, whatever its source', () => {
  const state = (clock: FakeClock, cooldown?: number, maxCooldown?: number) =>
    new ModelState({ name: 'm', cooldown }, 'east', clock.now, { maxCooldown });

  it('defaults to one day', () => {
    expect(DEFAULT_MAX_COOLDOWN).toBe(DAY);
    const clock = new FakeClock();
    const s = state(clock);
    expect(s.maxCooldown).toBe(DAY);
    s.markDown(1000 * DAY, 'rate_limit');
    expect(s.cooldownRemaining).toBe(DAY);
  });

  it("caps an upstream's retry-after (a 429's mark-down)", () => {
    const clock = new FakeClock();
    const s = state(clock, undefined, 60_000);
    const events: ModelEvent[] = [];
    s.listener = (_, e) => events.push(e);
    s.markDown(3_600_000, 'rate_limit');
    expect(s.cooldownRemaining).toBe(60_000);
    expect(s.cooldownUntil).toBe(clock.ms + 60_000);
    expect(events).toEqual([{ type: 'down', until: clock.ms + 60_000, reason: 'rate_limit' }]);
    expect(s.blockedBy({ input: 1, output: 0 })).toBe('quota');
    clock.advance(60_000);
    expect(s.isCooling()).toBe(false);
  });

  it("caps the model's own cooldown", () => {
    const clock = new FakeClock();
    const s = state(clock, 10 * DAY, 5_000);
    s.markDown(undefined, 'connection');
    expect(s.cooldownRemaining).toBe(5_000);
    expect(s.blockedBy({ input: 1, output: 0 })).toBe('down');
  });

  it('caps a mark-down by hand, and takes no time that is not a number', () => {
    const clock = new FakeClock();
    const s = state(clock, undefined, 5_000);
    s.markDown(Infinity);
    expect(s.cooldownRemaining).toBe(5_000);
    // By hand: down, with no reason of its own.
    expect(s.blockedBy({ input: 1, output: 0 })).toBe('down');
    expect(s.downReason).toBeUndefined();
    s.markUp();
    s.markDown(Number.NaN);
    expect(s.isCooling()).toBe(false);
    s.markDown(-5);
    expect(s.isCooling()).toBe(false);
  });

  it('caps a cooldown applied from the shared store, from now', () => {
    const clock = new FakeClock();
    const s = state(clock, undefined, 30_000);
    s.applyCooldown(clock.ms + 1000 * DAY);
    expect(s.cooldownRemaining).toBe(30_000);
    expect(s.blockedBy({ input: 1, output: 0 })).toBe('quota');
    s.applyCooldown(clock.ms + 10_000); // a shorter one from the store replaces it
    expect(s.cooldownRemaining).toBe(10_000);
    s.applyCooldown(clock.ms - 1); // over already
    expect(s.isCooling()).toBe(false);
  });

  it('keeps a longer running cooldown, and reports the remaining time in ms', () => {
    const clock = new FakeClock();
    const cooldown = new Cooldown(10_000);
    expect(cooldown.extend(clock.ms, 8_000, 'fault')).toBe(clock.ms + 8_000);
    expect(cooldown.extend(clock.ms, 2_000, 'quota')).toBe(0);
    expect(cooldown.kind).toBe('fault');
    clock.advance(3_000);
    expect(cooldown.remaining(clock.ms)).toBe(5_000);
    expect(cooldown.clear()).toBe(true);
    expect(cooldown.clear()).toBe(false);
  });

  it('comes from the options, and is validated there', () => {
    const sb = createSwitchboard({ deployments: openaiDeployments(1), maxCooldown: 2_000 });
    const s = [...sb.deployments.values()][0]!.models.values().next().value!;
    expect(s.maxCooldown).toBe(2_000);
    s.markDown(DAY, 'rate_limit');
    expect(s.cooldownRemaining).toBeLessThanOrEqual(2_000);
    void sb.close();
    const bad = { deployments: openaiDeployments(1), maxCooldown: -1 };
    expect(() => createSwitchboard(bad as SwitchboardOptions)).toThrow(/maxCooldown must be/);
  });
});

describe('ConsecutiveBreaker', () => {
  it('opens at its threshold of failures in a row, and a success closes it', () => {
    const breaker = new ConsecutiveBreaker(3);
    expect([breaker.failure(), breaker.failure()]).toEqual([false, false]);
    expect(breaker.failures).toBeLessThan(breaker.threshold);
    breaker.success();
    expect(breaker.failures).toBe(0);
    expect([breaker.failure(), breaker.failure(), breaker.failure()]).toEqual([false, false, true]);
    expect(breaker.failures).toBe(breaker.threshold);
    expect(breaker.failure()).toBe(true);
    breaker.success();
    expect(breaker.failures).toBe(0);
    expect(breaker.failure()).toBe(false);
  });

  it("is a model's count of consecutive failures; a mark-up resets it", () => {
    const s = new ModelState({ name: 'm' }, 'east', new FakeClock().now);
    expect([s.recordFailure(), s.recordFailure(), s.recordFailure()]).toEqual([1, 2, 3]);
    expect(s.breaker.failures).toBe(s.breaker.threshold);
    s.markUp();
    expect(s.breaker.failures).toBe(0);
    s.recordFailure();
    s.recordSuccess();
    expect(s.breaker.failures).toBe(0);
  });
});

/**
 * The headroom as the room test sees it (a reserve carried by a batch call's admission charge),
 * when interactive traffic counts as present, and the options that set them.
 */
import { createSwitchboard, SwitchboardError, type SwitchboardOptions } from 'nestjs-switchboard';
import { ModelState } from '../../src/registry/model-state';
import { LaneActivity } from '../../src/scheduling/lanes';
import { FakeClock } from '../support/random';

describe('a reserve in the admission charge', () => {
  const clock = new FakeClock();

  it('leaves that share of every limit free: tokens, requests and the newest sixth', () => {
    const state = new ModelState({ name: 'm', tpm: 1_000, rpm: 60 }, 'east', clock.now);
    state.quota.slide(60_000);
    state.admit({ input: 700, output: 0 });
    expect(state.hasRoom({ input: 100, output: 0 })).toBe(true);
    expect(state.hasRoom({ input: 100, output: 0, reserve: 0.15 })).toBe(true);
    expect(state.hasRoom({ input: 200, output: 0, reserve: 0.15 })).toBe(false);
    expect(state.hasRoom({ input: 200, output: 0 })).toBe(true);
    // 10 requests may go in the newest sixth (rpm / 6); with a reserve of 0.5, 5.
    const requests = new ModelState({ name: 'm', rpm: 60 }, 'east', clock.now);
    requests.quota.slide(60_000);
    for (let i = 0; i < 4; i++) requests.admit({ input: 1, output: 0 });
    expect(requests.hasRoom({ input: 1, output: 0, reserve: 0.5 })).toBe(true);
    requests.admit({ input: 1, output: 0 });
    expect(requests.hasRoom({ input: 1, output: 0, reserve: 0.5 })).toBe(false);
    expect(requests.hasRoom({ input: 1, output: 0 })).toBe(true);
  });

  it('says when room comes back for it, later than without', () => {
    const state = new ModelState({ name: 'm', tpm: 1_000 }, 'east', clock.now);
    state.quota.slide(60_000);
    state.admit({ input: 900, output: 0 });
    const plain = state.roomAt({ input: 100, output: 0 });
    const held = state.roomAt({ input: 100, output: 0, reserve: 0.15 });
    expect(plain).toBe(0);
    expect(held).toBeGreaterThan(0);
    // Within the window and one of its 500-ms buckets.
    expect(held).toBeLessThanOrEqual(60_500);
    // It never counts as a call that can never fit.
    expect(state.quota.exceeds({ input: 900, output: 0, reserve: 0.5 })).toBeUndefined();
  });
});

describe('interactive traffic present', () => {
  it('while an interactive call waits, and for the hold after one was sent', () => {
    const clock = new FakeClock();
    let waiting = 0;
    const lanes = new LaneActivity({
      headroom: 0.2,
      hold: 5_000,
      clock: clock.now,
      waiting: () => waiting,
    });
    const charge = { input: 10, output: 5 };
    expect(lanes.admissionFor('m', 'batch', charge)).toBe(charge);
    waiting = 1;
    expect(lanes.admissionFor('m', 'batch', charge)).toEqual({ ...charge, reserve: 0.2 });
    waiting = 0;
    lanes.sent('m');
    clock.advance(4_999);
    expect(lanes.presentFor('m')).toBe(1);
    expect(lanes.admissionFor('m', 'batch', charge).reserve).toBe(0.2);
    expect(lanes.admissionFor('m', 'interactive', charge)).toBe(charge);
    expect(lanes.admissionFor('other', 'batch', charge)).toBe(charge);
    clock.advance(1);
    expect(lanes.admissionFor('m', 'batch', charge)).toBe(charge);
  });

  it('a headroom of 0 holds nothing back', () => {
    const lanes = new LaneActivity({ headroom: 0 });
    lanes.sent('m');
    const charge = { input: 10, output: 5 };
    expect(lanes.admissionFor('m', 'batch', charge)).toBe(charge);
  });
});

describe('queue options for lanes', () => {
  const deployments: SwitchboardOptions['deployments'] = [
    { provider: 'openai', name: 'east', apiKey: 'k', models: [{ name: 'gpt-4o-mini' }] },
  ];
  const build = (queue: unknown) => () =>
    createSwitchboard({ deployments, queue } as SwitchboardOptions);

  it.each([
    [{ maxWait: 1, batchHeadroom: 1 }, 'queue.batchHeadroom'],
    [{ maxWait: 1, batchHeadroom: -0.1 }, 'queue.batchHeadroom'],
    [{ maxWait: 1, batchHeadroom: '15%' }, 'queue.batchHeadroom'],
    [{ maxWait: 1, batchMaxWait: -1 }, 'queue.batchMaxWait'],
    [{ maxWait: 1, headroomHold: Number.NaN }, 'queue.headroomHold'],
  ])('%j is refused, naming %s', (queue, path) => {
    expect(build(queue)).toThrow(SwitchboardError);
    expect(build(queue)).toThrow(path);
  });

  it('takes them when valid', async () => {
    const sb = build({ maxWait: 1_000, batchMaxWait: 60_000, batchHeadroom: 0, headroomHold: 0 })();
    expect(sb.queue!.maxWaitOf('batch')).toBe(60_000);
    await sb.close();
  });
});

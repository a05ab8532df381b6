import { QuotaLedger } from '../../src/quota/quota-ledger';
import { PROVIDERS } from '../../src/providers/index';
import { DeploymentRegistry } from '../../src/registry/deployment-registry';
import type { ModelEvent } from '../../src/registry/model-event';
import { SessionAffinity } from '../../src/selection/session-affinity';
import { FakeClock } from '../support/random';

/** A fake clock that counts how often it is read. */
class CountingClock extends FakeClock {
  reads = 0;
  readonly read = (): number => {
    this.reads++;
    return this.ms;
  };
}

const call = { input: 300, output: 100 };

function registry(clock: () => number): DeploymentRegistry {
  return new DeploymentRegistry(
    [
      {
        provider: 'openai',
        name: 'east',
        baseURL: 'http://127.0.0.1:2/east/openai/v1/',
        apiKey: 'k',
        models: [{ name: 'm', tpm: 10_000, rpm: 100 }],
      },
    ],
    { builders: PROVIDERS, sessions: new SessionAffinity(), clock },
  );
}

describe('the work of a call where nothing is configured for it', () => {
  it('tells a listener of every charge from the moment it listens, and stops when it leaves', () => {
    const clock = new FakeClock();
    const reg = registry(clock.now);
    const state = reg.deployments.get('east')!.models.get('m')!;
    state.admit(call);
    const heard: ModelEvent[] = [];
    const stop = reg.onModelEvent((_s, event) => heard.push(event));
    state.admit(call);
    // The output cap stays charged; what was used beyond it counts on answer.
    state.settle(call, { input: 320, output: 140 });
    expect(heard).toEqual([
      { type: 'spend', tokens: 400, requests: 1 },
      { type: 'spend', tokens: 60, requests: 0 },
    ]);
    stop();
    state.admit(call);
    expect(heard).toHaveLength(2);
    // The charges nobody heard still count.
    expect(state.tpmUsage).toBe(400 + 460 + 400);
  });

  it('settles an answer and counts its latency on one reading of the clock', () => {
    const clock = new CountingClock();
    const state = registry(clock.read).deployments.get('east')!.models.get('m')!;
    const sentAt = state.admit(call);
    clock.advance(500);
    const before = clock.reads;
    state.answered(call, { input: 300, output: 150 }, sentAt);
    expect(clock.reads - before).toBe(1);
    expect(state.tpmUsage).toBe(450);
    expect(state.latency.perTokenMs).toBeCloseTo(500 / 150);
  });

  it('refuses room by a limit learned from the headers once it is learned, not before', () => {
    const clock = new FakeClock();
    // The learned limit's arithmetic: no ramp (quota/ramp.spec) holds the second call back.
    const ledger = new QuotaLedger({ tpm: 100_000, rampUp: false }, clock.now, {
      upstream: 'anthropic',
    });
    const big = { input: 5_000, output: 0 };
    expect(ledger.hasRoom(big)).toBe(true);
    expect(ledger.util()).toBe(0);
    ledger.observe(
      new Headers({
        'anthropic-ratelimit-input-tokens-limit': '4000',
        'anthropic-ratelimit-input-tokens-remaining': '4000',
        'anthropic-ratelimit-requests-remaining': '50',
      }),
    );
    expect(ledger.limits.itpm.value).toBe(4_000);
    // The remaining 4 000 is rounded to the nearest thousand: 500 may be used already.
    ledger.admit({ input: 2_000, output: 0 });
    expect(ledger.util()).toBeCloseTo(2_500 / 4_000);
    expect(ledger.hasRoom({ input: 1_500, output: 0 })).toBe(true);
    expect(ledger.hasRoom({ input: 1_600, output: 0 })).toBe(false);
    // Above the learned limit itself: one call a window goes, as a probe of the header's word.
    expect(ledger.hasRoom(big)).toBe(true);
    ledger.admit(big);
    expect(ledger.hasRoom(big)).toBe(false);
  });

  it('counts the requests of the newest sixth once the window slides, not before', () => {
    const clock = new FakeClock();
    const ledger = new QuotaLedger({ rpm: 60 }, clock.now);
    const one = { input: 0, output: 0 };
    for (let i = 0; i < 10; i++) ledger.admit(one);
    expect(ledger.hasRoom(one)).toBe(true);
    ledger.slide(60_000);
    // 10 requests in the newest sixth, against rpm / 6 = 10.
    expect(ledger.hasRoom(one)).toBe(false);
    expect(ledger.util()).toBe(1);
  });
});

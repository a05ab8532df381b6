import type { Admission } from '../../src/quota/admission';
import { QuotaLedger } from '../../src/quota/quota-ledger';
import { agreed, SendOrder } from '../../src/quota/send-order';
import { FakeClock } from '../support/random';

const headers = (values: Record<string, number>) =>
  new Headers(Object.entries(values).map(([k, v]): [string, string] => [k, String(v)]));

describe('SendOrder', () => {
  it('says what was charged after a call was sent', () => {
    const order = new SendOrder('tokens');
    const calls: Admission[] = [100, 200, 300].map((output) => ({ input: 0, output }));
    for (const call of calls) order.sent(call, call.output);
    expect(calls.map((call) => order.after(call, call.output))).toEqual([500, 300, 0]);
    expect(order.after({ input: 0, output: 5 }, 5)).toBeUndefined();
  });

  it('takes a correction as far as both matchings agree', () => {
    expect(agreed(-18, -1)).toBe(-1);
    expect(agreed(3, 7)).toBe(3);
    expect(agreed(-3, 2)).toBe(0);
    expect(agreed(0, 5)).toBe(0);
  });
});

describe('request windows in the ledger', () => {
  function ledger(config: ConstructorParameters<typeof QuotaLedger>[0]) {
    const clock = new FakeClock();
    const l = new QuotaLedger(config, clock.now, { upstream: 'azure' });
    l.slide(60_000);
    return l;
  }

  it('learns the 1 s window from a limit of rpm / 60, and never replaces a configured rpm', () => {
    const l = ledger({ rpm: 600 });
    expect(l.burst.limit).toBe(100);
    l.observe(headers({ 'x-ratelimit-limit-requests': 10, 'x-ratelimit-remaining-requests': 10 }));
    expect(l.limits.rpm.value).toBe(600);
    expect(l.burst.limit).toBe(10);
    const one = { input: 0, output: 0 };
    for (let i = 0; i < 10; i++) l.admit({ ...one });
    expect(l.hasRoom(one)).toBe(false);
  });

  it('keeps a configured requestWindow whatever the headers say', () => {
    const l = ledger({ rpm: 600, requestWindow: '10s' });
    l.observe(headers({ 'x-ratelimit-limit-requests': 10, 'x-ratelimit-remaining-requests': 10 }));
    expect(l.burst.limit).toBe(100);
  });
});

describe('output reservation in the ledger', () => {
  it('charges an uncapped call its reservation, learned from its own answer', () => {
    const clock = new FakeClock();
    const l = new QuotaLedger({ tpm: 10_000 }, clock.now, { upstream: 'azure' });
    const first: Admission = { input: 10, output: 0, uncapped: 1 };
    const sentAt = l.admit(first);
    // Azure's default until an answer shows the upstream's own.
    expect(first.output).toBe(648);
    // The upstream reserved 4 096 for it: 10 000 - 10 - 4 096 left.
    l.observe(headers({ 'x-ratelimit-remaining-tokens': 5_894 }), first, sentAt);
    expect(l.outputReservation).toBe(4_096);
    expect(first.output).toBe(4_096);
    expect(l.tokensAt(clock.ms)).toBe(4_106);
    // One more fits, a third does not.
    expect(l.hasRoom({ input: 10, output: 0, uncapped: 1 })).toBe(true);
    l.admit({ input: 10, output: 0, uncapped: 1 });
    expect(l.hasRoom({ input: 10, output: 0, uncapped: 1 })).toBe(false);
    expect(l.hasRoom({ input: 10, output: 100 })).toBe(true);
  });
});

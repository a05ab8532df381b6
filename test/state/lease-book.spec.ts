import type { QuotaLedger } from '../../src/quota/quota-ledger';
import type { ModelState } from '../../src/registry/model-state';
import { LeaseBook, type LeaseContext } from '../../src/state/leases/lease-book';
import type { LeaseMeter } from '../../src/state/leases/lease-meter';
import { eventually } from '../support/eventually';
import { FakeClock } from '../support/random';
import { redisForFile } from '../support/redis-server';

const store = redisForFile();

const LIMIT = 6_000;

/** An Azure model's ledger as a lease book reads it: 6 000 tokens a minute, no request limit. */
function ledger(): QuotaLedger {
  return {
    utilization: undefined,
    upstream: 'azure',
    limits: { tpm: { value: LIMIT }, rpm: { value: 0 } },
    burst: { limit: 0, period: '10s' },
    gate: () => undefined,
    lastReading: () => undefined,
  } as unknown as QuotaLedger;
}

/** One replica's lease book on the shared `field`, on the test's clock. */
function replica(id: string, field: string, clock: FakeClock, limits = ledger()) {
  const exchanges: number[] = [];
  const context: LeaseContext = {
    client: () => store.client,
    prefix: () => 'book:',
    id,
    share: 0.05,
    timeout: 1_000,
    peerTtlMs: 60_000,
    skewMs: 5_000,
    clock: clock.now,
    replicas: () => 2,
    degrade: (error) => {
      throw error;
    },
    skipped: () => undefined,
    exchanged: () => exchanges.push(clock.ms),
    counted: () => undefined,
  };
  const state = { listener: undefined } as unknown as ModelState;
  const book = new LeaseBook(limits, [state], field, context);
  const tokens = book.meters[0]!;
  return { book, tokens, exchanges };
}

/** A call of `charge` tokens asks `meter`'s replica for room; the exchange it starts is awaited. */
async function call(r: ReturnType<typeof replica>, charge: number, now: number): Promise<boolean> {
  const admission = { input: charge, output: 0 };
  const before = r.exchanges.length;
  if (charge <= r.tokens.room(now, admission)) return spend(r.tokens, admission, now);
  await eventually(() => r.exchanges.length > before);
  await eventually(() => !(r.book as unknown as { running?: unknown }).running);
  return charge <= r.tokens.room(now, admission) && spend(r.tokens, admission, now);
}

function spend(meter: LeaseMeter, admission: { input: number; output: number }, now: number) {
  meter.admit(admission, now);
  return true;
}

describe('a lease book where the room is short', () => {
  it('hands back the part no call of its own fits, in the same step as its refused ask', async () => {
    const clock = new FakeClock();
    const field = `short-${clock.ms}`;
    const a = replica('a', field, clock);
    const b = replica('b', field, clock);
    const now = clock.ms;
    // A takes 5 000 and spends 4 600: 400 left with it, 1 000 in the store (short: < 1 500).
    a.tokens.want = 5_000;
    a.book.request();
    await eventually(() => a.tokens.balance === 5_000);
    a.tokens.admit({ input: 4_600, output: 0 }, now);
    expect(a.tokens.balance).toBe(400);
    // B spends 800 of the store's 1 000.
    expect(await call(b, 800, now)).toBe(true);
    // A's next call needs 1 000: its 400 and the store's 200 are not enough.
    expect(await call(a, 1_000, now)).toBe(false);
    // What A held went back with that ask: B's call of 500 fits the 600 now in the store.
    expect(a.tokens.balance).toBe(0);
    expect(await call(b, 500, now)).toBe(true);
    // Nothing was lent beyond the window's limit: 4 600 + 800 + 500 spent, 100 left.
    expect(Number(await store.client.hget(`book:lease:${field}`, 'tokens:b'))).toBe(5_900);
  });

  it('asks a full window again after 1, 2, 4 and 8 s, not at every look of a waiting call', async () => {
    const clock = new FakeClock();
    const field = `full-${clock.ms}`;
    const a = replica('a', field, clock);
    const b = replica('b', field, clock);
    a.tokens.want = LIMIT;
    a.book.request();
    await eventually(() => a.tokens.balance === LIMIT);
    // B's call waits 20 s in a window A took whole, looking every 250 ms as a queue may.
    const admission = { input: 500, output: 0 };
    const asked: number[] = [];
    for (let t = 0; t <= 20_000; t += 250) {
      const before = b.exchanges.length;
      b.tokens.room(clock.ms, admission);
      await eventually(() => !(b.book as unknown as { running?: unknown }).running);
      if (b.exchanges.length > before) asked.push(t);
      clock.advance(250);
    }
    expect(asked).toEqual([0, 1_000, 3_000, 7_000, 15_000]);
    // Nothing was granted meanwhile: A holds the whole window.
    expect(b.tokens.balance).toBe(0);
  });

  it('hands back all an idle lease holds once the room is short, its last call included', async () => {
    const clock = new FakeClock();
    const field = `idle-${clock.ms}`;
    const a = replica('a', field, clock);
    a.tokens.want = 5_000;
    a.book.request();
    await eventually(() => a.tokens.balance === 5_000);
    a.tokens.admit({ input: 4_000, output: 0 }, clock.ms);
    // Nothing left to lend: the store has 1 000 of 6 000, and A holds 1 000 it does not use.
    clock.advance(2_000);
    a.book.tend(clock.ms - 1_000);
    await eventually(() => a.exchanges.length === 2);
    expect(a.tokens.balance).toBe(0);
    expect(Number(await store.client.hget(`book:lease:${field}`, 'tokens:b'))).toBe(4_000);
  });
});

/** A Claude model's ledger as a lease book reads it: 10 000 input tokens a minute, nothing else. */
function claudeLedger(): QuotaLedger {
  return {
    utilization: undefined,
    upstream: 'anthropic',
    limits: { tpm: { value: 0 }, rpm: { value: 0 }, itpm: { value: 10_000 }, otpm: { value: 0 } },
    burst: { limit: 0, period: '10s' },
    gate: () => undefined,
    lastReading: () => undefined,
  } as unknown as QuotaLedger;
}

describe('a lease book on a Claude bucket', () => {
  it('keeps what it holds and what it has in flight out of the room the store refills', async () => {
    const clock = new FakeClock();
    const field = `bucket-${clock.ms}`;
    const claude = (id: string) => {
      const r = replica(id, field, clock, claudeLedger());
      return { ...r, input: r.book.meters.find((m) => m.spec.meter === 'input')! };
    };
    const a = claude('a');
    const b = claude('b');
    // A takes 2 000 and sends a call of 1 000: it holds 1 000, and 1 000 may still reach the
    // upstream (a call's input is charged when it arrives; Claude's output when produced).
    a.input.want = 2_000;
    a.book.request();
    await eventually(() => a.input.balance === 2_000);
    const call = { input: 1_000, output: 0 };
    a.input.admit(call, clock.ms);
    // A minute later the upstream's bucket is full again, less what A has yet to charge to it;
    // A said what it holds on the way (within the peer TTL its part in the store lasts).
    clock.advance(30_000);
    a.book.tend(clock.ms - 1_000, clock.ms);
    await eventually(() => a.exchanges.length === 2);
    clock.advance(30_000);
    b.input.want = 8_000;
    b.book.request();
    await eventually(() => b.input.balance === 8_000);
    // Nothing is left to lend: the store counts A's 2 000 as taken.
    expect(b.input.storeRoom).toBe(0);
    // Once the call is answered and A says so (at the latest 20 s on, while it holds any), the
    // store counts only the 1 000 A still holds.
    a.input.answered(call);
    clock.advance(20_000);
    a.book.tend(clock.ms - 1_000, clock.ms);
    await eventually(() => a.exchanges.length === 3);
    expect(Number(await store.client.hget(`book:lease:${field}`, 'input:h:a'))).toBe(1_000);
  });
});

describe('a lease book with a limit not in force', () => {
  it("wants nothing of Claude's combined tokens without a tpm, and asks for the input a call needs", async () => {
    const clock = new FakeClock();
    const r = replica('a', `inactive-${clock.ms}`, clock, claudeLedger());
    const [tokens, input] = ['tokens', 'input'].map((name) =>
      r.book.meters.find((m) => m.spec.meter === name)!,
    );
    r.book.warm();
    await eventually(() => input!.balance > 0);
    // A call of 3 000 input tokens does not fit the first lease: it asks for its input alone.
    const before = r.exchanges.length;
    expect(input!.room(clock.ms, { input: 3_000, output: 0 })).toBeLessThan(3_000);
    await eventually(() => r.exchanges.length > before && input!.balance >= 3_000);
    expect(tokens!.active).toBe(false);
    expect(tokens!.want).toBe(0);
    expect(input!.want).toBe(0);
  });
});

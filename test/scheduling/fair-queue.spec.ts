import { CapacityQueue } from '../../src/scheduling/capacity-queue';
import { FairLine } from '../../src/scheduling/fair-line';
import type { CallTags } from 'nestjs-switchboard/extend';

interface Item {
  tenant: string;
  cost: number;
  id: string;
}

const item = (tenant: string, id: string, cost = 1): Item => ({ tenant, cost, id });

/** Serves every item of `line` in the order it hands them out. */
function drain(line: FairLine<Item>): string[] {
  const out: string[] = [];
  for (let next = line.peek(); next !== undefined; next = line.peek()) {
    line.take(next);
    out.push(next.id);
  }
  return out;
}

describe('FairLine: deficit round robin across tenants', () => {
  it('tenants of equal calls take turns; each tenant keeps its own order', () => {
    const line = new FairLine<Item>();
    for (let i = 0; i < 4; i++) line.push(item('a', `a${i}`));
    for (let i = 0; i < 2; i++) line.push(item('b', `b${i}`));
    line.push(item('c', 'c0'));
    expect(drain(line)).toEqual(['a0', 'b0', 'c0', 'a1', 'b1', 'a2', 'a3']);
    expect(line.size).toBe(0);
  });

  it("a tenant's parts (a/x) share its one turn: naming twelve parts takes no larger share", () => {
    const line = new FairLine<Item>();
    for (let i = 0; i < 12; i++) line.push(item(`a/part-${i}`, `a${i}`));
    for (let i = 0; i < 12; i++) line.push(item('b', `b${i}`));
    const first12 = drain(line).slice(0, 12);
    expect(first12.filter((id) => id.startsWith('a'))).toHaveLength(6);
    expect(first12.filter((id) => id.startsWith('b'))).toHaveLength(6);
    // Within the tenant, first come first served, whatever part each call named.
    expect(first12.filter((id) => id.startsWith('a'))).toEqual([
      'a0',
      'a1',
      'a2',
      'a3',
      'a4',
      'a5',
    ]);
  });

  it('counts what waits per tenant id as named, parts apart', () => {
    const line = new FairLine<Item>();
    line.push(item('a/x', '1'));
    line.push(item('a/x', '2'));
    line.push(item('a', '3'));
    expect(line.byTenant()).toEqual(
      new Map([
        ['a/x', 2],
        ['a', 1],
      ]),
    );
    expect(line.tenantCount).toBe(1);
  });

  it('shares tokens, not calls: a tenant of small calls gets as many tokens per turn as one of large calls', () => {
    const line = new FairLine<Item>();
    for (let i = 0; i < 3; i++) line.push(item('big', `B${i}`, 400));
    for (let i = 0; i < 12; i++) line.push(item('small', `s${i}`, 100));
    const order = drain(line);
    // Each turn is worth the largest call (400): one large call, or four small ones.
    expect(order.slice(0, 10)).toEqual([
      'B0',
      's0',
      's1',
      's2',
      's3',
      'B1',
      's4',
      's5',
      's6',
      's7',
    ]);
  });

  it('a call peeked but not served (no room yet) stays the next one; no turn is spent waiting', () => {
    const line = new FairLine<Item>();
    line.push(item('a', 'a0'));
    line.push(item('b', 'b0'));
    expect(line.peek()?.id).toBe('a0');
    expect(line.peek()?.id).toBe('a0');
    line.push(item('c', 'c0'));
    expect(line.peek()?.id).toBe('a0');
    expect(drain(line)).toEqual(['a0', 'b0', 'c0']);
  });

  it('drops a tenant as soon as it has nothing waiting, served or gone', () => {
    const line = new FairLine<Item>();
    const gone = item('a', 'a0');
    line.push(gone);
    line.push(item('b', 'b0'));
    expect(line.tenantCount).toBe(2);
    expect(line.remove(gone)).toBe(true);
    expect(line.remove(gone)).toBe(false);
    expect(line.tenantCount).toBe(1);
    line.take(line.peek()!);
    expect(line.tenantCount).toBe(0);
    expect(line.peek()).toBeUndefined();
  });

  it('memory stays bounded by what waits, whatever the number of tenants seen', () => {
    const line = new FairLine<Item>();
    let most = 0;
    for (let i = 0; i < 100_000; i++) {
      line.push(item(`tenant-${i}`, `x${i}`));
      most = Math.max(most, line.tenantCount);
      if (i % 10 === 9) drain(line);
    }
    expect(most).toBe(10);
    expect(line.tenantCount).toBe(0);
  });
});

describe('CapacityQueue: lanes and tenants', () => {
  const interactive = (tenant = ''): CallTags => ({ lane: 'interactive', tenant });
  const batch = (tenant = ''): CallTags => ({ lane: 'batch', tenant });

  /** A queue whose calls find room only when `open` says so; `served` lists them in order. */
  function rig() {
    const queue = new CapacityQueue({ maxWait: 60_000, batchMaxWait: 120_000 });
    const state = { open: false };
    const served: string[] = [];
    const join = (id: string, tags: CallTags) =>
      queue
        .wait<string>('m', () => (state.open ? { target: id } : { waitMs: 60_000 }), {
          tags,
          onTimeout: () => new Error('timeout'),
          onAbort: () => new Error('aborted'),
        })
        .then(
          (t) => served.push(t),
          () => served.push(`${id}!`),
        );
    return { queue, state, served, join };
  }

  it('serves every waiting interactive call before any batch call, tenants in turn within each lane', async () => {
    const { queue, state, served, join } = rig();
    const all = [
      join('b-x0', batch('x')),
      join('b-x1', batch('x')),
      join('b-y0', batch('y')),
      join('i-p0', interactive('p')),
      join('i-p1', interactive('p')),
      join('i-q0', interactive('q')),
    ];
    expect(queue.length('m')).toBe(6);
    expect(queue.length('m', 'batch')).toBe(3);
    expect(queue.waiting('m').interactive).toEqual(
      new Map([
        ['p', 2],
        ['q', 1],
      ]),
    );
    state.open = true;
    queue.kick('m');
    await Promise.all(all);
    expect(served).toEqual(['i-p0', 'i-q0', 'i-p1', 'b-x0', 'b-y0', 'b-x1']);
    expect(queue.length('m')).toBe(0);
    expect([...queue.models()]).toEqual([]);
  });

  it('a batch call waits up to batchMaxWait, an interactive one up to maxWait', () => {
    const queue = new CapacityQueue({ maxWait: 1_000, batchMaxWait: 30_000 });
    expect(queue.maxWaitOf('interactive')).toBe(1_000);
    expect(queue.maxWaitOf('batch')).toBe(30_000);
    expect(new CapacityQueue({ maxWait: 1_000 }).maxWaitOf('batch')).toBe(1_000);
  });

  it('maxQueued bounds each lane apart: a batch flood cannot shut interactive calls out', () => {
    const queue = new CapacityQueue({ maxWait: 60_000, maxQueued: 2 });
    const waits = [0, 1].map(() =>
      queue
        .wait('m', () => ({ waitMs: 60_000 }), {
          tags: batch(),
          onTimeout: () => new Error('timeout'),
          onAbort: () => new Error('aborted'),
        })
        .catch((e: unknown) => e),
    );
    expect(queue.canJoin('m', 'batch')).toBe(false);
    expect(queue.canJoin('m', 'interactive')).toBe(true);
    queue.close(() => new Error('closed'));
    return Promise.all(waits);
  });
});

describe('CapacityQueue: tries that take a round trip (a tenant line over a shared count)', () => {
  afterEach(() => jest.useRealTimers());

  /** A try answered when the test says so: `answer` settles the one under way. */
  function deferredTries() {
    const pending: ((turn: { target: string } | { waitMs: number }) => void)[] = [];
    let tries = 0;
    const tryTurn = () => {
      tries++;
      return new Promise<{ target: string } | { waitMs: number }>((r) => pending.push(r));
    };
    return {
      tryTurn,
      tries: () => tries,
      answer: (turn: { target: string } | { waitMs: number }) => pending.shift()!(turn),
    };
  }

  it('the line waits for the head try under way: no second try, a kick included, until it answers', async () => {
    jest.useFakeTimers();
    const queue = new CapacityQueue({ maxWait: 60_000 });
    const t = deferredTries();
    const first = queue.wait('acme', t.tryTurn, {
      onTimeout: () => new Error('timeout'),
      onAbort: () => new Error('aborted'),
    });
    const second = queue.wait('acme', () => ({ target: 'second' }), {
      onTimeout: () => new Error('timeout'),
      onAbort: () => new Error('aborted'),
    });
    expect(t.tries()).toBe(1);
    queue.kick('acme');
    expect(t.tries()).toBe(1);
    t.answer({ waitMs: 5_000 });
    await Promise.resolve();
    expect(queue.length('acme')).toBe(2);
    // Refused: tried again when room is expected, and the one behind it only after it.
    await jest.advanceTimersByTimeAsync(5_000);
    expect(t.tries()).toBe(2);
    t.answer({ target: 'first' });
    await expect(first).resolves.toBe('first');
    await expect(second).resolves.toBe('second');
    expect([...queue.models()]).toEqual([]);
  });

  it('a head whose wait ends while its try is under way keeps the room that try took', async () => {
    jest.useFakeTimers();
    const queue = new CapacityQueue({ maxWait: 1_000 });
    const t = deferredTries();
    const call = queue.wait('acme', t.tryTurn, {
      onTimeout: () => new Error('timeout'),
      onAbort: () => new Error('aborted'),
    });
    await jest.advanceTimersByTimeAsync(1_000);
    t.answer({ target: 'room' });
    await expect(call).resolves.toBe('room');
  });

  it("a head whose wait ends while its try is under way leaves with that try's refusal when it answers", async () => {
    jest.useFakeTimers();
    const queue = new CapacityQueue({ maxWait: 1_000 });
    const t = deferredTries();
    const refusals: unknown[] = [];
    const call = queue.wait('acme', t.tryTurn, {
      onTimeout: (_waited, last) => {
        refusals.push(last);
        return new Error('timeout');
      },
      onAbort: () => new Error('aborted'),
    });
    await jest.advanceTimersByTimeAsync(1_000);
    expect(refusals).toEqual([]);
    t.answer({ waitMs: 30_000 });
    await expect(call).rejects.toThrow('timeout');
    expect(refusals).toEqual([{ waitMs: 30_000 }]);
    expect(t.tries()).toBe(1);
    expect([...queue.models()]).toEqual([]);
  });

  it('a try that throws ends its call with that error, and the next one is served', async () => {
    const queue = new CapacityQueue({ maxWait: 60_000 });
    const opts = { onTimeout: () => new Error('timeout'), onAbort: () => new Error('aborted') };
    const failing = queue.wait('acme', () => Promise.reject(new Error('store down')), opts);
    const next = queue.wait('acme', () => Promise.resolve({ target: 'next' }), opts);
    await expect(failing).rejects.toThrow('store down');
    await expect(next).resolves.toBe('next');
  });
});

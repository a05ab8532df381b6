import { seededRandom } from '../../src/testing';
import {
  LEASE_SCRIPT,
  leaseArgs,
  localGrant,
  readLeaseReply,
  type MeterAsk,
} from '../../src/state/leases/lease-script';
import { redisForFile } from '../support/redis-server';

const store = redisForFile();

const LIMIT = 6_000;
/** Exchanges of each interleaving. */
const STEPS = 200;
const MINUTE = 60_000;

/** One exchange of replica `id` for one meter, at `now`. */
async function exchange(key: string, id: string, ask: MeterAsk, now: number) {
  const args = leaseArgs({ now, id, peerTtlMs: MINUTE, skewMs: 5_000 }, [ask]);
  const raw = await store.client.eval(LEASE_SCRIPT, 2, key, `${key}:peers`, ...args);
  const reply = readLeaseReply(raw, [ask], now, 5_000);
  expect(reply).toBeDefined();
  return reply!;
}

const ask = (kind: 'w' | 'b', need: number, give = 0, leaseEnd = 0): MeterAsk => ({
  meter: 'tokens',
  kind,
  limit: LIMIT,
  lengthMs: MINUTE,
  need,
  share: 0.05,
  give,
  leaseEnd,
  hint: 0,
  read: -1,
  held: 0,
});

describe('the lease script, under any interleaving of four replicas', () => {
  jest.setTimeout(30_000);
  it.each([1, 2, 3])(
    'grants a window no more than its limit, hand-backs and debts included (seed %i)',
    async (seed) => {
      const random = seededRandom(seed);
      const key = `w${seed}`;
      let now = 1_700_000_000_000;
      const held = new Map<string, { balance: number; end: number }>();
      /** Per window (by its end): what was granted and not handed back. */
      const taken = new Map<number, number>();
      for (let step = 0; step < STEPS; step++) {
        now += Math.floor(random() * 2_000);
        const id = `r${Math.floor(random() * 4)}`;
        const mine = held.get(id) ?? { balance: 0, end: 0 };
        if (mine.end <= now) Object.assign(mine, { balance: 0, end: 0 });
        const roll = random();
        // Hand back part of a lease, owe what a call spent beyond it, or ask for one.
        const give =
          roll < 0.2 && mine.balance > 0
            ? Math.floor(mine.balance * random())
            : roll < 0.3 && mine.end > now
              ? -Math.floor(50 * random())
              : 0;
        const need = give === 0 ? 100 + Math.floor(random() * 900) : 0;
        const reply = await exchange(key, id, ask('w', need, give, mine.end), now);
        const g = reply.grants[0]!;
        // A debt is spending that already happened: it takes room from the next grants (the
        // script counts it), and is not a grant itself.
        if (give > 0 && g.end === mine.end) {
          taken.set(g.end, (taken.get(g.end) ?? 0) - give);
          mine.balance -= give;
        }
        if (give < 0 && g.end === mine.end) {
          expect(g.room).toBeLessThanOrEqual(LIMIT - (taken.get(g.end) ?? 0) + give);
        }
        if (g.grant > 0) {
          expect(g.grant).toBeGreaterThanOrEqual(need);
          taken.set(g.end, (taken.get(g.end) ?? 0) + g.grant);
          if (mine.end !== g.end) mine.balance = 0;
          mine.balance += g.grant;
          mine.end = g.end;
        }
        held.set(id, mine);
        for (const sum of taken.values()) expect(sum).toBeLessThanOrEqual(LIMIT);
      }
      // The limit was reached, not only respected: windows filled up.
      expect(Math.max(...taken.values())).toBeGreaterThan(LIMIT * 0.8);
    },
  );

  it.each([1, 2, 3])(
    'never lets a bucket that refills continuously be overdrawn (seed %i)',
    async (seed) => {
      const random = seededRandom(seed);
      const key = `b${seed}`;
      let now = 1_700_000_000_000;
      // The upstream's own bucket, charged as each grant is spent, at once.
      let level = LIMIT;
      let at = now;
      let granted = 0;
      for (let step = 0; step < STEPS; step++) {
        now += Math.floor(random() * 500);
        level = Math.min(LIMIT, level + ((now - at) * LIMIT) / MINUTE);
        at = now;
        const id = `r${Math.floor(random() * 4)}`;
        const need = 100 + Math.floor(random() * 900);
        const g = (await exchange(key, id, ask('b', need), now)).grants[0]!;
        level -= g.grant;
        granted += g.grant;
        expect(level).toBeGreaterThanOrEqual(-1e-6);
      }
      // 200 steps of 250 ms on average: about 50 s, most of a minute's refill on top of the bucket.
      expect(granted).toBeGreaterThan(LIMIT * 1.5);
    },
  );

  it.each([1, 2, 3, 4, 5])(
    'never lets a bucket be overdrawn while replicas hold leases and calls in flight (seed %i)',
    async (seed) => {
      const random = seededRandom(seed);
      const key = `held${seed}`;
      let now = 1_700_000_000_000;
      // The upstream's bucket, charged when a call arrives (input) or when it is answered (output).
      let level = LIMIT;
      let at = now;
      const charge = (amount: number) => {
        level = Math.min(LIMIT, level + ((now - at) * LIMIT) / MINUTE) - amount;
        at = now;
        expect(level).toBeGreaterThanOrEqual(-1e-6);
      };
      const replicas = Array.from({ length: 4 }, (_, i) => ({
        id: `r${i}`,
        balance: 0,
        flying: [] as number[],
        reportedAt: now,
      }));
      type Replica = (typeof replicas)[number];
      const held = (r: Replica) => r.balance + r.flying.reduce((a, b) => a + b, 0);
      const lease = async (r: Replica, need: number) => {
        const g = (await exchange(key, r.id, { ...ask('b', need), held: held(r) }, now)).grants[0]!;
        r.balance += g.grant;
        r.reportedAt = now;
        return g.grant;
      };
      let granted = 0;
      for (let step = 0; step < STEPS; step++) {
        // Now and then a lull, long enough for the bucket to refill while leases lie unspent;
        // a replica holding any says so again within the peer TTL (every 20 s, as the meter).
        const lull = random() < 0.1 ? 90_000 : Math.floor(random() * 1_000);
        for (let t = 0; t < lull; t += 10_000) {
          now += Math.min(10_000, lull - t);
          for (const r of replicas)
            if (held(r) > 0 && now - r.reportedAt >= 20_000) await lease(r, 0);
        }
        const r = replicas[Math.floor(random() * replicas.length)]!;
        const roll = random();
        if (roll < 0.4) {
          // A lease is asked for, with what the replica holds: it may lie unspent for a while.
          granted += await lease(r, 100 + Math.floor(random() * 900));
        } else if (roll < 0.7 && r.balance > 0) {
          // A call spends part of the lease: charged as it arrives, or only when answered.
          const spent = Math.ceil(r.balance * random());
          r.balance -= spent;
          if (random() < 0.5) charge(spent);
          else r.flying.push(spent);
        } else if (r.flying.length > 0) {
          charge(r.flying.shift()!);
        }
      }
      expect(granted).toBeGreaterThan(LIMIT * 1.5);
    },
  );

  it('counts the replicas that exchanged within the peer TTL', async () => {
    const now = 1_700_000_000_000;
    for (const id of ['a', 'b', 'c']) await exchange('peers', id, ask('w', 1), now);
    expect((await exchange('peers', 'd', ask('w', 1), now + 1_000)).peers).toBe(4);
    expect((await exchange('peers', 'd', ask('w', 1), now + MINUTE + 1)).peers).toBe(1);
  });

  it('skips a field that is not a number, with the field named, and a key of another type', async () => {
    const now = 1_700_000_000_000;
    await store.client.hset('bad', 'tokens:a', 'not a number', 'tokens:b', '12');
    const reply = await exchange('bad', 'x', ask('w', 100), now);
    expect(reply.bad).toBe('tokens:a');
    expect(reply.grants[0]!.grant).toBeGreaterThan(0);
    await store.client.set('str', 'a string');
    const other = await exchange('str', 'x', ask('b', 100), now);
    expect(other.bad).toMatch(/another type/);
    expect(other.grants[0]!.grant).toBe(300);
  });

  it('grants the same as the store, in this process, to a replica away from it', () => {
    const held = { a: 0, b: 0 };
    const now = 1_700_000_000_000;
    expect(localGrant(held, ask('w', 100), now)).toEqual({
      grant: 300,
      end: now + MINUTE,
      room: 5_700,
    });
    expect(localGrant(held, ask('w', 6_000), now).grant).toBe(0);
    expect(localGrant(held, ask('w', 100), now + MINUTE).grant).toBe(300);
  });
});

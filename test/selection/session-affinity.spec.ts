import { SessionAffinity } from '../../src/selection/session-affinity';
import { seeded } from '../support/random';

describe('SessionAffinity', () => {
  it('forgets the least recently used session past its capacity', () => {
    const lru = new SessionAffinity(2);
    lru.set('a', 'east');
    lru.set('b', 'west');
    expect(lru.get('a')).toBe('east'); // a is now the most recent
    lru.set('c', 'south');
    expect(lru.get('b')).toBeUndefined();
    expect(lru.get('a')).toBe('east');
    expect(lru.get('c')).toBe('south');
    expect(lru.size).toBe(2);
  });

  it('stays at capacity under many distinct sessions', () => {
    const lru = new SessionAffinity(100);
    for (let i = 0; i < 10_000; i++) lru.set(`s${i}`, 'east');
    expect(lru.size).toBe(100);
    expect(lru.get('s9999')).toBe('east');
    expect(lru.get('s0')).toBeUndefined();
  });

  it('keeps exactly what a Map re-inserted on every read keeps, in the same order, over random steps', () => {
    const rng = seeded(11);
    const lru = new SessionAffinity(8);
    // The reference: a Map whose insertion order is the recency order.
    const ref = new Map<string, string>();
    const touch = (k: string, v: string) => {
      ref.delete(k);
      ref.set(k, v);
      if (ref.size > 8) ref.delete(ref.keys().next().value!);
    };
    for (let step = 0; step < 5_000; step++) {
      const key = `s${Math.floor(rng() * 14)}`;
      const r = rng();
      if (r < 0.45) {
        const v = `d${Math.floor(rng() * 5)}`;
        lru.set(key, v);
        touch(key, v);
      } else if (r < 0.9) {
        const v = ref.get(key);
        if (v !== undefined) touch(key, v);
        expect(lru.get(key)).toBe(v);
      } else if (r < 0.98) {
        expect(lru.delete(key)).toBe(ref.delete(key));
      } else {
        lru.clear();
        ref.clear();
      }
      expect(lru.size).toBe(ref.size);
      expect([...lru.entries()]).toEqual([...ref.entries()]);
    }
  });

  it('rejects a capacity that is not a positive integer', () => {
    expect(() => new SessionAffinity(0)).toThrow(/maxSessions must be a positive integer/);
  });
});

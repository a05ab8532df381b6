import { SessionAffinity } from '../../src/selection/session-affinity';

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

  it('rejects a capacity that is not a positive integer', () => {
    expect(() => new SessionAffinity(0)).toThrow(/maxSessions must be a positive integer/);
  });
});

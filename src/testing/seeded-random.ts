/**
 * A seeded pseudo-random source in [0, 1) (mulberry32), for repeatable selection in tests and
 * benchmarks: pass it as the switchboard's `random` option.
 *
 * @example
 * ```ts
 * const sb = createSwitchboard({ deployments, random: seededRandom(42) });
 * ```
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

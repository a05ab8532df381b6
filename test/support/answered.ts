import type { ModelState } from '../../src/registry/model-state';
import type { SimulatedDeployment } from '../../src/testing';

/**
 * Lets every call on its way reach its answer while an injected clock stands still: turns of the
 * event loop until no model of `states` has a call in flight (at most 10 000).
 *
 * @example
 * ```ts
 * clock.advance(100);
 * await allAnswered(states);
 * ```
 */
export async function allAnswered(states: readonly ModelState[]): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (states.every((state) => state.inFlight.count === 0) && i > 2) return;
  }
}

/**
 * What simulated deployments were sent and how many of those they refused with a 429.
 *
 * @example
 * ```ts
 * const { sent, rejected } = upstreamCounts(sims);
 * ```
 */
export function upstreamCounts(sims: readonly SimulatedDeployment[]): {
  sent: number;
  rejected: number;
} {
  let sent = 0;
  let rejected = 0;
  for (const sim of sims) {
    sent += sim.stats.requests;
    rejected += sim.stats.rateLimited;
  }
  return { sent, rejected };
}

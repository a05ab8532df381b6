/**
 * The strategies the benchmark compares, all plugged in through the public API
 * (`class X extends Selector`), so each still gets the switchboard's health filter, cooldowns and
 * failover; only the choice among healthy deployments differs.
 */
import { Selector, TwoRandomChoices } from '../src';
import type { Deployment } from '../src/extend';

/** Uniformly random among the healthy candidates. */
export class RandomSelector extends Selector {
  constructor(private readonly random: () => number = Math.random) {
    super();
  }
  select(_model: string, candidates: readonly Deployment[]): Deployment {
    return candidates[Math.floor(this.random() * candidates.length)]!;
  }
}

/** Round-robin over the healthy candidates. */
export class RoundRobinSelector extends Selector {
  private next = 0;
  select(_model: string, candidates: readonly Deployment[]): Deployment {
    return candidates[this.next++ % candidates.length]!;
  }
}

/** The least utilized candidate: a full scan per call (the original's cost profile). */
export class LeastUtilizedSelector extends Selector {
  select(model: string, candidates: readonly Deployment[]): Deployment {
    let best = candidates[0]!;
    let bestUtil = best.models.get(model)!.util;
    for (let i = 1; i < candidates.length; i++) {
      const u = candidates[i]!.models.get(model)!.util;
      if (u < bestUtil) {
        best = candidates[i]!;
        bestUtil = u;
      }
    }
    return best;
  }
}

/**
 * A custom strategy, as a user would write one: random, weighted by headroom (1 - util), so a
 * deployment at 90 % gets a fifth of the traffic of one at 50 %.
 */
export class HeadroomWeightedSelector extends Selector {
  constructor(private readonly random: () => number = Math.random) {
    super();
  }
  select(model: string, candidates: readonly Deployment[]): Deployment {
    let total = 0;
    const room = candidates.map((d) => {
      const r = Math.max(0, 1 - d.models.get(model)!.util);
      total += r;
      return r;
    });
    let x = this.random() * total;
    for (let i = 0; i < candidates.length; i++) {
      x -= room[i]!;
      if (x < 0) return candidates[i]!;
    }
    return candidates[candidates.length - 1]!;
  }
}

/**
 * The strategies by key (for `--strategies`), with the name the report prints. `window` forces
 * the usage window of that row (default: the scenario's, see `--window`).
 */
export const STRATEGIES: Record<
  string,
  { label: string; make: () => Selector; window?: 'fixed' | 'sliding' }
> = {
  '2rc': { label: 'two random choices', make: () => new TwoRandomChoices() },
  '2rc-fixed': {
    label: 'two random choices, fixed window',
    make: () => new TwoRandomChoices(),
    window: 'fixed',
  },
  random: { label: 'random', make: () => new RandomSelector() },
  rr: { label: 'round-robin', make: () => new RoundRobinSelector() },
  least: { label: 'least-utilized', make: () => new LeastUtilizedSelector() },
  custom: { label: 'custom: headroom-weighted', make: () => new HeadroomWeightedSelector() },
};

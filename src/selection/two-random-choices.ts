import type { Deployment } from '../registry/deployment';
import { Selector } from './selector';

/** Options of {@link TwoRandomChoices}. */
export interface TwoRandomChoicesOptions {
  /** Random source in [0, 1). Default `Math.random`. */
  random?: () => number;
  /**
   * Largest random amount added to each utilization inside the comparison. Default 0: the two
   * candidates are drawn in random order and the first wins a tie, which already breaks ties at
   * random without blurring real differences.
   */
  jitter?: number;
}

/** Draws before giving up on sampling and scanning the pool instead. */
const SAMPLES = 8;

/**
 * The power of two random choices: draw two distinct healthy deployments at random and take the
 * less utilized. Costs the same for 2 or 10 000 deployments: it samples the pool and only scans it
 * when samples keep coming up unhealthy.
 *
 * @example
 * ```ts
 * createSwitchboard({ deployments, selector: new TwoRandomChoices({ random: seeded(42) }) });
 * ```
 */
export class TwoRandomChoices extends Selector {
  private readonly random: () => number;
  private readonly jitter: number;

  constructor(options: TwoRandomChoicesOptions = {}) {
    super();
    this.random = options.random ?? Math.random;
    this.jitter = options.jitter ?? 0;
  }

  select(model: string, candidates: readonly Deployment[]): Deployment {
    const n = candidates.length;
    const i = Math.floor(this.random() * n);
    let j = Math.floor(this.random() * (n - 1));
    if (j >= i) j++;
    return this.better(model, candidates[i]!, candidates[j]!);
  }

  override pick(
    model: string,
    pool: readonly Deployment[],
    exclude?: ReadonlySet<Deployment>,
  ): Deployment {
    const n = pool.length;
    if (n < 2 || (exclude && exclude.size > 0)) return super.pick(model, pool, exclude);
    // Rejection sampling draws uniformly among the healthy deployments, exactly as drawing from
    // the healthy list would, without building it.
    let a: Deployment | undefined;
    let tries = 0;
    while (tries < SAMPLES) {
      tries++;
      const d = pool[Math.floor(this.random() * n)]!;
      if (d.models.get(model)!.isHealthy()) {
        a = d;
        break;
      }
    }
    if (a === undefined) return super.pick(model, pool, exclude);
    while (tries < 2 * SAMPLES) {
      tries++;
      const d = pool[Math.floor(this.random() * n)]!;
      if (d !== a && d.models.get(model)!.isHealthy()) return this.better(model, a, d);
    }
    return super.pick(model, pool, exclude);
  }

  private better(model: string, a: Deployment, b: Deployment): Deployment {
    let ua = a.models.get(model)!.util;
    let ub = b.models.get(model)!.util;
    if (this.jitter > 0) {
      ua += this.random() * this.jitter;
      ub += this.random() * this.jitter;
    }
    return ub < ua ? b : a;
  }
}

import type { Deployment } from '../registry/deployment';
import type { Admission } from '../quota/admission';
import { hasRoom } from '../routing/room';
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

/** Running sums of the weights of a pool, for drawing in proportion to weight. */
interface Weights {
  model: string;
  /** `sums[i]` = weight of pool[0..i]; `undefined` when every weight is the same. */
  sums: Float64Array | undefined;
}

/**
 * The power of two random choices: draw two distinct healthy deployments at random, in
 * proportion to their `weight` (all equal by default), and take the less utilized. Between
 * deployments equally far from their quotas the first drawn wins, so traffic follows the weights;
 * with quotas, utilization still decides. Costs the same for 2 or 10 000 deployments: it samples
 * the pool (a binary search per draw when weights differ) and only scans it when samples keep
 * coming up unhealthy.
 *
 * @example
 * ```ts
 * createSwitchboard({ deployments, selector: new TwoRandomChoices({ random: seeded(42) }) });
 * ```
 */
export class TwoRandomChoices extends Selector {
  private readonly random: () => number;
  private readonly jitter: number;
  /** Pools handed to {@link choose} are the registry's own arrays: their weights are kept. */
  private readonly weights = new WeakMap<readonly Deployment[], Weights>();

  constructor(options: TwoRandomChoicesOptions = {}) {
    super();
    this.random = options.random ?? Math.random;
    this.jitter = options.jitter ?? 0;
  }

  select(model: string, candidates: readonly Deployment[]): Deployment {
    const n = candidates.length;
    const sums = sumsOf(model, candidates);
    if (sums === undefined) {
      const i = Math.floor(this.random() * n);
      let j = Math.floor(this.random() * (n - 1));
      if (j >= i) j++;
      return this.better(model, candidates[i]!, candidates[j]!);
    }
    const i = this.drawIndex(sums);
    // The second draw is in proportion to weight among the others.
    let r = this.random() * (sums[n - 1]! - weightAt(sums, i));
    let j = -1;
    for (let k = 0; k < n; k++) {
      if (k === i) continue;
      j = k;
      const w = weightAt(sums, k);
      if (r < w) break;
      r -= w;
    }
    return this.better(model, candidates[i]!, candidates[j]!);
  }

  override choose(
    model: string,
    pool: readonly Deployment[],
    exclude?: ReadonlySet<Deployment>,
    admission?: Admission,
  ): Deployment | undefined {
    const n = pool.length;
    if (n < 2) return super.choose(model, pool, exclude, admission);
    const sums = this.cachedSums(model, pool);
    // Rejection sampling draws among the healthy deployments exactly as drawing from the healthy
    // list would, without building it.
    let a: Deployment | undefined;
    let tries = 0;
    while (tries < SAMPLES) {
      tries++;
      const d = pool[sums === undefined ? Math.floor(this.random() * n) : this.drawIndex(sums)]!;
      if (isOpen(d, model, exclude, admission)) {
        a = d;
        break;
      }
    }
    if (a === undefined) return super.choose(model, pool, exclude, admission);
    while (tries < 2 * SAMPLES) {
      tries++;
      const d = pool[sums === undefined ? Math.floor(this.random() * n) : this.drawIndex(sums)]!;
      if (d !== a && isOpen(d, model, exclude, admission)) return this.better(model, a, d);
    }
    return super.choose(model, pool, exclude, admission);
  }

  private cachedSums(model: string, pool: readonly Deployment[]): Float64Array | undefined {
    let w = this.weights.get(pool);
    if (w === undefined || w.model !== model) {
      w = { model, sums: sumsOf(model, pool) };
      this.weights.set(pool, w);
    }
    return w.sums;
  }

  /** An index drawn in proportion to weight: the first running sum above a uniform draw. */
  private drawIndex(sums: Float64Array): number {
    const r = this.random() * sums[sums.length - 1]!;
    let lo = 0;
    let hi = sums.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (sums[mid]! > r) hi = mid;
      else lo = mid + 1;
    }
    return lo;
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

/** Not excluded, and with room for the call. (A function, not a closure made per call.) */
function isOpen(
  d: Deployment,
  model: string,
  exclude: ReadonlySet<Deployment> | undefined,
  admission: Admission | undefined,
): boolean {
  return !exclude?.has(d) && hasRoom(d.models.get(model)!, admission);
}

/** Running sums of the weights, or `undefined` when they are all equal (a uniform draw). */
function sumsOf(model: string, pool: readonly Deployment[]): Float64Array | undefined {
  const first = pool[0]?.models.get(model)?.weight ?? 1;
  if (pool.every((d) => (d.models.get(model)?.weight ?? 1) === first)) return undefined;
  const sums = new Float64Array(pool.length);
  let total = 0;
  pool.forEach((d, i) => {
    total += d.models.get(model)?.weight ?? 1;
    sums[i] = total;
  });
  return sums;
}

function weightAt(sums: Float64Array, i: number): number {
  return sums[i]! - (i === 0 ? 0 : sums[i - 1]!);
}

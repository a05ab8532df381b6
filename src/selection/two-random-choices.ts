import { keptLoad } from '../quota/hot-row';
import type { Deployment } from '../registry/deployment';
import type { ModelState } from '../registry/model-state';
import { Selector, type Gate } from './selector';

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
  /**
   * Weigh each candidate's recent latency and its calls in flight beside utilization, as
   * Finagle's peak EWMA does: the one with the lower `latency × (inFlight + 1) / (1 - util)`
   * wins. Latency is normalised for answer length (time to first token of streams, else time per
   * output token) and fades while a deployment is not called, so a recovered one is tried again.
   * Room still decides which deployments may take a call. Default false: utilization alone.
   */
  latency?: boolean;
}

/** Below this share of quota left, the cost of a candidate stops growing (1 / 0.01). */
const MIN_HEADROOM = 0.01;
/** A latency estimate faded to nothing still lets calls in flight count. */
const MIN_LATENCY = 0.001;

/** The table of a model a draw asks itself (its row is -1). */
const NO_ROWS = new Float64Array(0);

/** Draws before giving up on sampling and scanning the pool instead. */
const SAMPLES = 8;

/**
 * What is kept of a pool for drawing from it: its model states, where each is kept in its hot row
 * and, when weights differ, their running sums.
 */
interface Drawn {
  model: string;
  /** `states[i]` = the model's state on pool[i]. */
  states: ModelState[];
  /**
   * `tables[i]`: the table of the hot row of `states[i]` (for a registry's pool, the same one
   * for all); `rows[i]`: the row's index there, -1 when the model must be asked itself.
   */
  tables: Float64Array[];
  rows: Int32Array;
  /** `sums[i]` = weight of pool[0..i]; `undefined` when every weight is the same. */
  sums: Float64Array | undefined;
}

/**
 * The power of two random choices: draw two distinct admitted deployments at random, in
 * proportion to their `weight` (all equal by default), and take the one with less {@link load}.
 * Between deployments equally far from their quotas the first drawn wins, so traffic follows the
 * weights; with quotas, utilization still decides. Costs the same for 2 or 10 000 deployments: it
 * samples the pool (a binary search per draw when weights differ) and only scans it when samples
 * keep coming up closed.
 *
 * With `latency: true` the two draws are compared on recent latency and calls in flight too
 * (see {@link TwoRandomChoicesOptions.latency}): a slow region gets only what the fast ones
 * cannot take quickly, and the overflow when they are full.
 *
 * @example
 * ```ts
 * createSwitchboard({ deployments, selector: new TwoRandomChoices({ random: seeded(42) }) });
 * createSwitchboard({ deployments, selector: new TwoRandomChoices({ latency: true }) });
 * ```
 */
export class TwoRandomChoices extends Selector {
  private readonly random: () => number;
  private readonly jitter: number;
  private readonly latency: boolean;
  /** Whether {@link load} is this class's own, which a draw may read from the hot row. */
  private readonly rowLoad: boolean;
  /** Load alone decides: no jitter, no latency. */
  private readonly plain: boolean;
  /** Pools handed to {@link pick} are the registry's own arrays: what a draw needs is kept. */
  private readonly drawn = new WeakMap<readonly Deployment[], Drawn>();

  constructor(options: TwoRandomChoicesOptions = {}) {
    super();
    this.random = options.random ?? Math.random;
    this.jitter = options.jitter ?? 0;
    this.latency = options.latency ?? false;
    this.rowLoad = this.load === TwoRandomChoices.prototype.load;
    this.plain = this.jitter === 0 && !this.latency;
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

  override pick(model: string, pool: readonly Deployment[], gate: Gate): Deployment | undefined {
    const n = pool.length;
    if (n < 2) return super.pick(model, pool, gate);
    const drawn = this.drawnOf(model, pool);
    const { states, sums } = drawn;
    // With the gate's clock reading, a draw reads its model's hot row (one line of memory) and
    // asks the model itself only when the row cannot tell.
    const now = gate.admitsRow === undefined ? undefined : gate.now;
    // Rejection sampling draws among the admitted deployments exactly as drawing from their list
    // would, without building it.
    let a = -1;
    let tries = 0;
    while (tries < SAMPLES) {
      tries++;
      const i = sums === undefined ? Math.floor(this.random() * n) : this.drawIndex(sums);
      if (admitted(drawn, i, pool, gate, now)) {
        a = i;
        break;
      }
    }
    if (a < 0) return super.pick(model, pool, gate);
    while (tries < 2 * SAMPLES) {
      tries++;
      const b = sums === undefined ? Math.floor(this.random() * n) : this.drawIndex(sums);
      if (b !== a && admitted(drawn, b, pool, gate, now)) {
        const first = this.loadAt(drawn, a, now);
        const second = this.loadAt(drawn, b, now);
        // Compared here when load alone decides: a number handed to a call that is not inlined
        // is boxed on the heap, and this is every call's path.
        const wins = this.plain
          ? second < first
          : this.secondWins(states[a]!, states[b]!, first, second);
        return wins ? pool[b] : pool[a];
      }
    }
    return super.pick(model, pool, gate);
  }

  /**
   * The load metric the two draws are compared on: the model's utilization on the deployment
   * (the largest share of any limit; 1 while cooling). Subclasses may weigh more.
   */
  protected load(state: ModelState): number {
    return state.util;
  }

  /** {@link load} of the i-th of a drawn pool, from its hot row while that holds at `now`. */
  private loadAt(drawn: Drawn, i: number, now: number | undefined): number {
    const row = drawn.rows[i]!;
    if (now !== undefined && row >= 0 && this.rowLoad) {
      const load = keptLoad(drawn.tables[i]!, row, now);
      if (load >= 0) return load;
    }
    return this.load(drawn.states[i]!);
  }

  /** Whether the second drawn is the better, their loads `l1` and `l2`; the first wins a tie. */
  private secondWins(first: ModelState, second: ModelState, l1: number, l2: number): boolean {
    if (this.jitter > 0) {
      l1 += this.random() * this.jitter;
      l2 += this.random() * this.jitter;
    }
    if (!this.latency) return l2 < l1;
    // Latencies of one kind (time to first token, else per output token); none yet: equal.
    const pair = first.latency.against(second.latency);
    const c1 = cost(pair === undefined ? 1 : pair[0], first.inFlight.count, l1);
    const c2 = cost(pair === undefined ? 1 : pair[1], second.inFlight.count, l2);
    return c2 < c1;
  }

  private drawnOf(model: string, pool: readonly Deployment[]): Drawn {
    let w = this.drawn.get(pool);
    if (w === undefined || w.model !== model) {
      const states = pool.map((d) => d.models.get(model)!);
      const rows = states.map((s) => s.drawRow);
      w = {
        model,
        states,
        tables: rows.map((r) => r?.table ?? NO_ROWS),
        rows: Int32Array.from(rows, (r) => r?.row ?? -1),
        sums: sumsOf(model, pool),
      };
      this.drawn.set(pool, w);
    }
    return w;
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
    const first = a.models.get(model)!;
    const second = b.models.get(model)!;
    return this.secondWins(first, second, this.load(first), this.load(second)) ? b : a;
  }
}

/** Whether `gate` admits the i-th of a drawn pool: from its hot row while that can tell. */
function admitted(
  drawn: Drawn,
  i: number,
  pool: readonly Deployment[],
  gate: Gate,
  now: number | undefined,
): boolean {
  const row = drawn.rows[i]!;
  if (now !== undefined && row >= 0) {
    const answer = gate.admitsRow!(drawn.tables[i]!, row, now);
    if (answer >= 0) return answer === 1;
  }
  return gate.admits(drawn.states[i]!, pool[i]!);
}

/**
 * Peak EWMA's cost, `latency × (inFlight + 1)`, grown as the quota fills (`/ (1 - load)`) so
 * that utilization still keeps calls away from a deployment near its limits.
 */
function cost(latency: number, inFlight: number, load: number): number {
  const headroom = 1 - load;
  return (
    (latency > MIN_LATENCY ? latency : MIN_LATENCY) *
    (inFlight + 1) *
    (1 / (headroom > MIN_HEADROOM ? headroom : MIN_HEADROOM))
  );
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

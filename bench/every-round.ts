/**
 * Section 2 judged on every round: 1 000 calls launched at once over the deployments on sockets,
 * by a switchboard, by a switchboard with tenants and budgets configured, and by plain `openai`
 * clients round-robin, in one process. Every round builds its side afresh (a new switchboard, new
 * SDK clients: no round inherits another's warm objects), and the collector's time during the
 * round is part of the round. With `forcedGc`, a full collection with nothing in flight comes
 * before each round: it also throws away the optimized code built on the last round's objects
 * (V8's "weak objects" deopts), so every round starts from colder code on both sides. The order
 * of the sides rotates each round, so a slow stretch of the machine falls on each in turn.
 *
 * Each round prints its row; the summary is the worst quartile over the rounds (the upper quartile
 * of the added launch time, the lower of the throughput ratio), beside the median and the worst
 * round, so a round the collector or the machine spoiled counts against the switchboard.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { runRound, type RoundResult } from './rounds';
import { fixed, gc, median, quantile, table } from './util';

/** One way of sending a round's calls, built afresh for every round. */
export interface RoundSide {
  name: string;
  /**
   * The reference itself again (plain SDK clients): what the reference's own spread makes of the
   * targets, judged like a switchboard side but never against the plain switchboard.
   */
  floor?: boolean;
  /** A fresh sender for one round, and what to close after it. */
  open(): { send(i: number): Promise<unknown>; close(): Promise<void> };
}

/** One side's figures in one round. */
export interface SideRound {
  /** µs per call to launch the round's calls (the original's "overhead per request"). */
  launchUs: number;
  /** Calls answered per second, first launch to last answer. */
  throughput: number;
  /** CPU µs per call over the round (the collector's included). */
  cpuUs: number;
  /** ms the collector ran during the round, and how many collections. */
  gcMs: number;
  gcs: number;
  failed: number;
}

/** The targets a switchboard side is judged against, on the worst quartile of the rounds. */
export interface Targets {
  /** Most µs added to launch a call, over the reference side. */
  launchUs: number;
  /** Least throughput, as a ratio of the reference side's. */
  throughput: number;
  /** Most µs a side may add over the plain switchboard (tenants and budgets configured). */
  extraUs: number;
}

export interface EveryRoundOptions {
  rounds: number;
  /** Unrecorded rounds first (JIT, sockets). */
  warmup: number;
  requests: number;
  inflight: number;
  targets: Targets;
  /** A full collection before each round (see above). */
  forcedGc: boolean;
}

/** The figures of {@link everyRound}: per side, one row per recorded round. */
export interface EveryRoundFigures {
  rounds: number;
  requests: number;
  inflight: number;
  sides: Record<string, SideRound[]>;
  /** Per switchboard side, against the reference (the last side). */
  judged: Record<string, Judged>;
}

interface Judged {
  launchDiffUs: Spread;
  throughputRatio: Spread;
  cpuRatio: Spread;
  /** Against the plain switchboard (the first side), for the sides after it. */
  extraUs?: Spread;
  meets: boolean;
}

/** Median, worst quartile and worst round; "worst" is high for costs, low for throughput. */
interface Spread {
  median: number;
  worstQuartile: number;
  worst: number;
}

const costSpread = (xs: number[]): Spread => ({
  median: median(xs),
  worstQuartile: quantile(xs, 0.75),
  worst: Math.max(...xs),
});

const gainSpread = (xs: number[]): Spread => ({
  median: median(xs),
  worstQuartile: quantile(xs, 0.25),
  worst: Math.min(...xs),
});

/** Collections between `start()` and `stop()`, from the `gc` performance entries. */
function gcMeter(): { start(): void; stop(): { ms: number; count: number } } {
  let ms = 0;
  let count = 0;
  let on = false;
  const observer = new PerformanceObserver((list) => {
    if (!on) return;
    for (const entry of list.getEntries()) {
      ms += entry.duration;
      count++;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    start() {
      ms = 0;
      count = 0;
      on = true;
    },
    stop() {
      on = false;
      observer.disconnect();
      return { ms, count };
    },
  };
}

/** Lets the `gc` entries of the round reach their observer (they are queued to a later turn). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function oneRound(side: RoundSide, o: EveryRoundOptions): Promise<SideRound> {
  const { send, close } = side.open();
  if (o.forcedGc) gc();
  await settle();
  const meter = gcMeter();
  meter.start();
  let r: RoundResult;
  try {
    r = await runRound(send, o.requests, o.inflight);
  } finally {
    await close();
  }
  await settle();
  const collected = meter.stop();
  return {
    launchUs: (r.distributionMs / r.requests) * 1000,
    throughput: (r.requests / r.totalMs) * 1000,
    cpuUs: r.cpuUs / r.requests,
    gcMs: collected.ms,
    gcs: collected.count,
    failed: r.failed,
  };
}

/**
 * Runs the sides round after round; the last side is the reference (the direct SDK calls), the
 * first the plain switchboard.
 *
 * @example
 * ```ts
 * const out = await everyRound([sb, sbTenants, direct], { rounds: 12, warmup: 2, requests: 1000, inflight: 1000, targets });
 * ```
 */
export async function everyRound(
  sides: readonly RoundSide[],
  o: EveryRoundOptions,
): Promise<EveryRoundFigures> {
  const rows: SideRound[][] = sides.map(() => []);
  for (let k = 0; k < o.warmup + o.rounds; k++) {
    for (let j = 0; j < sides.length; j++) {
      const i = (j + k) % sides.length;
      const r = await oneRound(sides[i]!, o);
      if (k >= o.warmup) rows[i]!.push(r);
    }
  }
  const ref = rows[sides.length - 1]!;
  const out: EveryRoundFigures = {
    rounds: o.rounds,
    requests: o.requests,
    inflight: o.inflight,
    sides: {},
    judged: {},
  };
  sides.forEach((s, i) => (out.sides[s.name] = rows[i]!));
  for (let i = 0; i < sides.length - 1; i++) {
    const mine = rows[i]!;
    const launchDiffUs = costSpread(mine.map((r, k) => r.launchUs - ref[k]!.launchUs));
    const throughputRatio = gainSpread(mine.map((r, k) => r.throughput / ref[k]!.throughput));
    const cpuRatio = costSpread(mine.map((r, k) => r.cpuUs / ref[k]!.cpuUs));
    const judged: Judged = {
      launchDiffUs,
      throughputRatio,
      cpuRatio,
      meets:
        launchDiffUs.worstQuartile <= o.targets.launchUs &&
        throughputRatio.worstQuartile >= o.targets.throughput,
    };
    if (i > 0 && !sides[i]!.floor) {
      judged.extraUs = costSpread(mine.map((r, k) => r.launchUs - rows[0]![k]!.launchUs));
      judged.meets &&= judged.extraUs.worstQuartile <= o.targets.extraUs;
    }
    out.judged[sides[i]!.name] = judged;
  }
  return out;
}

const signed = (x: number, digits: number): string => `${x >= 0 ? '+' : ''}${fixed(x, digits)}`;

/** The report of {@link everyRound}: every round's row, then the judged summary. */
export function everyRoundReport(f: EveryRoundFigures, targets: Targets): string {
  const names = Object.keys(f.sides);
  const ref = names[names.length - 1]!;
  const header = ['round'];
  for (const n of names) header.push(`${n} launch µs`);
  for (const n of names.slice(0, -1)) header.push(`${n} thr ratio`);
  header.push(...names.map((n) => `${n} GC ms (n)`));
  const rows: string[][] = [];
  for (let k = 0; k < f.rounds; k++) {
    const row = [String(k + 1)];
    for (const n of names) row.push(fixed(f.sides[n]![k]!.launchUs, 2));
    for (const n of names.slice(0, -1)) {
      row.push(fixed(f.sides[n]![k]!.throughput / f.sides[ref]![k]!.throughput, 3));
    }
    for (const n of names) {
      const r = f.sides[n]![k]!;
      row.push(`${fixed(r.gcMs, 1)} (${r.gcs})`);
    }
    rows.push(row);
  }
  const lines = [table(header, rows), ''];
  const summary: string[][] = [];
  for (const [name, j] of Object.entries(f.judged)) {
    const s = (label: string, x: Spread, d: number, sign = false) => [
      `${name}: ${label}`,
      sign ? signed(x.median, d) : fixed(x.median, d),
      sign ? signed(x.worstQuartile, d) : fixed(x.worstQuartile, d),
      sign ? signed(x.worst, d) : fixed(x.worst, d),
    ];
    summary.push(s(`launch µs above ${ref} (≤ ${targets.launchUs})`, j.launchDiffUs, 2, true));
    summary.push(s(`throughput / ${ref} (≥ ${targets.throughput})`, j.throughputRatio, 3));
    summary.push(s(`CPU per call / ${ref}`, j.cpuRatio, 3));
    if (j.extraUs) {
      summary.push(s(`launch µs above ${names[0]} (≤ ${targets.extraUs})`, j.extraUs, 2, true));
    }
  }
  lines.push(table(['over every round', 'median', 'worst quartile', 'worst round'], summary));
  const failed = names.map((n) => f.sides[n]!.reduce((a, r) => a + r.failed, 0));
  if (failed.some((x) => x > 0)) {
    lines.push(`Failed requests: ${names.map((n, i) => `${n} ${failed[i]}`).join(', ')}`);
  }
  for (const [name, j] of Object.entries(f.judged)) {
    lines.push(`${name}: ${j.meets ? 'meets' : 'misses'} the targets on the worst quartile`);
  }
  return lines.join('\n');
}

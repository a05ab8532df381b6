/**
 * Section 2 judged on every round: 1 000 calls launched at once over the deployments on sockets,
 * by a switchboard, by a switchboard with tenants and budgets configured, and by plain `openai`
 * clients round-robin, in one process. Every round builds its side afresh (a new switchboard, new
 * SDK clients: no round inherits another's warm objects), and the collector's time during the
 * round is part of the round. With `forcedGc`, a full collection with nothing in flight comes
 * before each round: it also throws away the optimized code built on the last round's objects
 * (V8's "weak objects" deopts), so every round starts from colder code on both sides.
 *
 * Each judged side runs in pairs with the reference: a round of the side and a round of fresh
 * plain clients at the same time, their bursts of `requests` calls alternating (`batches` each,
 * the order flipping every burst and every round), and the side is judged against its own pair's
 * reference round. A slow stretch of the machine then falls on both halves of a pair instead of
 * on one side's round and another's reference. A round's throughput is all its bursts' calls over
 * their time; its launch time is its first burst's, the one that follows the collection.
 *
 * Each round prints its row; the summary is the worst quartile over the rounds (the upper quartile
 * of the added launch time, the lower of the throughput ratio), beside the median and the worst
 * round, so a round the collector or the machine spoiled counts against the switchboard. The
 * reference judged against itself in the same pairs (`floor`) shows what the method can tell
 * apart: a target beyond that floor cannot be judged.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { scavenge } from './paired';
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
  /** Collections that began while the first burst's calls were being launched. */
  launchGcs: number;
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
  /** Bursts of `requests` calls per round, one after another (at least 1). */
  batches: number;
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
  batches: number;
  sides: Record<string, SideRound[]>;
  /** Per judged side, the reference's round paired with each of its rounds. */
  pairedWith: Record<string, SideRound[]>;
  /** Per switchboard side, against the reference (the last side). */
  judged: Record<string, Judged>;
  /** The side that is the reference again (`floor`), if any. */
  floor?: string;
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

/** The collections (start and duration, ms) from `start()` to `stop()`, from the `gc` entries. */
function gcLog(): { start(): void; stop(): Array<[number, number]> } {
  const entries: Array<[number, number]> = [];
  let on = false;
  const observer = new PerformanceObserver((list) => {
    if (!on) return;
    for (const entry of list.getEntries()) entries.push([entry.startTime, entry.duration]);
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    start() {
      on = true;
    },
    stop() {
      on = false;
      observer.disconnect();
      return entries;
    },
  };
}

/** Lets the `gc` entries of the round reach their observer (they are queued to a later turn). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** One side's figures from its bursts, the collections that began within them counted. */
function sideRound(
  bursts: readonly RoundResult[],
  spans: ReadonlyArray<[number, number]>,
  collections: ReadonlyArray<[number, number]>,
): SideRound {
  const calls = bursts.reduce((a, r) => a + r.requests, 0);
  const first = bursts[0]!;
  const mine = collections.filter(([t]) => spans.some(([t0, t1]) => t >= t0 && t <= t1));
  // The first burst's launch: from its first call's start to its last's (its span starts there).
  const [t0] = spans[0]!;
  const launching = collections.filter(([t]) => t >= t0 && t <= t0 + first.distributionMs);
  return {
    launchUs: (first.distributionMs / first.requests) * 1000,
    throughput: (calls / bursts.reduce((a, r) => a + r.totalMs, 0)) * 1000,
    cpuUs: bursts.reduce((a, r) => a + r.cpuUs, 0) / calls,
    gcMs: mine.reduce((a, [, ms]) => a + ms, 0),
    gcs: mine.length,
    launchGcs: launching.length,
    failed: bursts.reduce((a, r) => a + r.failed, 0),
  };
}

/**
 * One round of a pair, both sides built afresh: their bursts alternate (the first side's, the
 * second's, then the second's and the first's, ...), so a drift of the machine falls on both
 * alike. A minor collection comes before every burst; with `forcedGc`, a full one before each
 * side's first.
 */
async function pairRound(
  pair: readonly [RoundSide, RoundSide],
  o: EveryRoundOptions,
): Promise<[SideRound, SideRound]> {
  const open = pair.map((side) => side.open());
  const bursts: RoundResult[][] = [[], []];
  const spans: Array<Array<[number, number]>> = [[], []];
  const log = gcLog();
  log.start();
  try {
    for (let b = 0; b < Math.max(1, o.batches); b++) {
      for (const s of b % 2 === 0 ? [0, 1] : [1, 0]) {
        if (b === 0 && o.forcedGc) gc();
        // The young generation emptied, so a burst pays for scavenging what it allocated, not
        // what the other side's burst before it left (the two share one heap).
        else scavenge();
        if (b === 0) await settle();
        const t0 = performance.now();
        bursts[s]!.push(await runRound(open[s]!.send, o.requests, o.inflight));
        spans[s]!.push([t0, performance.now()]);
      }
    }
  } finally {
    for (const side of open) await side.close();
  }
  await settle();
  const collections = log.stop();
  return [
    sideRound(bursts[0]!, spans[0]!, collections),
    sideRound(bursts[1]!, spans[1]!, collections),
  ];
}

/**
 * Runs every side but the last in pairs with the last (the reference, the direct SDK calls), the
 * order within a pair alternating each round and the pairs' order rotating; the first side is the
 * plain switchboard.
 *
 * @example
 * ```ts
 * const out = await everyRound([sb, sbTenants, direct], { rounds: 12, batches: 3, warmup: 2, requests: 1000, inflight: 1000, targets, forcedGc: true });
 * ```
 */
export async function everyRound(
  sides: readonly RoundSide[],
  o: EveryRoundOptions,
): Promise<EveryRoundFigures> {
  const last = sides.length - 1;
  const reference = sides[last]!;
  const rows: SideRound[][] = sides.map(() => []);
  const refs: SideRound[][] = sides.map(() => []);
  for (let k = 0; k < o.warmup + o.rounds; k++) {
    for (let j = 0; j < last; j++) {
      const i = (j + k) % last;
      const sideFirst = (k + j) % 2 === 0;
      const [a, b] = await pairRound(
        sideFirst ? [sides[i]!, reference] : [reference, sides[i]!],
        o,
      );
      if (k < o.warmup) continue;
      rows[i]!.push(sideFirst ? a : b);
      refs[i]!.push(sideFirst ? b : a);
    }
  }
  const out: EveryRoundFigures = {
    rounds: o.rounds,
    batches: o.batches,
    requests: o.requests,
    inflight: o.inflight,
    sides: {},
    pairedWith: {},
    judged: {},
    floor: sides.find((s) => s.floor)?.name,
  };
  // The reference's own rows: its rounds paired with the plain switchboard.
  sides.forEach((s, i) => (out.sides[s.name] = i === last ? refs[0]! : rows[i]!));
  const added = (i: number) => rows[i]!.map((r, k) => r.launchUs - refs[i]![k]!.launchUs);
  for (let i = 0; i < last; i++) {
    const mine = rows[i]!;
    const ref = refs[i]!;
    out.pairedWith[sides[i]!.name] = ref;
    const launchDiffUs = costSpread(added(i));
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
      // Each side's added time over its own pair's reference, compared round by round.
      const plain = added(0);
      judged.extraUs = costSpread(added(i).map((x, k) => x - plain[k]!));
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
  const judged = Object.keys(f.pairedWith);
  const header = ['round'];
  for (const n of judged) {
    header.push(`${n} launch µs (its ${ref})`, 'GCs in launch', `thr ratio`, `GC ms (n)`);
  }
  const rows: string[][] = [];
  for (let k = 0; k < f.rounds; k++) {
    const row = [String(k + 1)];
    for (const n of judged) {
      const r = f.sides[n]![k]!;
      const p = f.pairedWith[n]![k]!;
      row.push(
        `${fixed(r.launchUs, 2)} (${fixed(p.launchUs, 2)})`,
        `${r.launchGcs} (${p.launchGcs})`,
        fixed(r.throughput / p.throughput, 3),
        `${fixed(r.gcMs, 1)} (${r.gcs})`,
      );
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
  for (const name of judged) {
    // A collection inside the launch loop copies every call in flight: it shows as a slow round.
    const rows = f.sides[name]!.map((r, k) => [r, f.pairedWith[name]![k]!] as const);
    const clean = rows.filter(([r, p]) => r.launchGcs === 0 && p.launchGcs === 0);
    const added = clean.map(([r, p]) => r.launchUs - p.launchUs);
    lines.push(
      `${name}: a collection in its launch in ${rows.filter(([r]) => r.launchGcs > 0).length} of ` +
        `${rows.length} rounds (its ${ref}: ${rows.filter(([, p]) => p.launchGcs > 0).length}); ` +
        (added.length === 0
          ? 'no round without one'
          : `launch µs above ${ref} in the ${added.length} rounds without one on either side: ` +
            `median ${signed(median(added), 2)}, worst ${signed(Math.max(...added), 2)}`),
    );
  }
  for (const [name, j] of Object.entries(f.judged)) {
    lines.push(`${name}: ${j.meets ? 'meets' : 'misses'} the targets on the worst quartile`);
  }
  // What the method cannot tell apart: the reference against itself falls short of a target.
  const floor = f.floor === undefined ? undefined : f.judged[f.floor];
  if (floor !== undefined) {
    const short: string[] = [];
    if (floor.throughputRatio.worstQuartile < targets.throughput) {
      short.push(
        `throughput (its worst quartile ${fixed(floor.throughputRatio.worstQuartile, 3)} < ${targets.throughput})`,
      );
    }
    if (floor.launchDiffUs.worstQuartile > targets.launchUs) {
      short.push(
        `launch (its worst quartile ${signed(floor.launchDiffUs.worstQuartile, 2)} > ${targets.launchUs})`,
      );
    }
    if (short.length > 0) {
      lines.push(
        `${f.floor} misses ${short.join(' and ')}: in this run the method cannot judge the ` +
          `other sides on ${short.length > 1 ? 'these targets' : 'this target'}`,
      );
    }
  }
  return lines.join('\n');
}

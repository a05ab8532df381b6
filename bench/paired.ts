/**
 * The CPU a call costs, side by side: the switchboard's calls and the same calls on plain SDK
 * clients (and, with `--against`, another checkout's switchboard) in many short rounds that
 * alternate in one process, compared pair by pair.
 *
 * What makes the figure hold still on a busy machine:
 * - CPU time (`process.cpuUsage`), not wall time: time the machine spends on other processes is
 *   not counted;
 * - short rounds, alternating (the order rotates and reverses every cycle), so a slow stretch of
 *   the machine falls on both sides of a pair; the figure is the median of the paired
 *   differences, with its spread (IQR) and a 95 % confidence interval of that median (order
 *   statistics, no assumption on the distribution);
 * - garbage collection accounted the same way on both sides: a minor collection, outside the
 *   measure, before every round, so a round pays for the scavenges of what it allocated and not
 *   for the garbage the round before left (a full collection would also throw away the optimized
 *   code of both sides, see `roundStart`); a major collection lands on either side and is an
 *   outlier the median ignores;
 * - calls in waves of a bounded size, as a server's are, rather than a thousand at once, whose
 *   live objects get promoted and collected again by full collections; many short rounds rather
 *   than a few long ones (on a loaded 2-core machine, 240 rounds of 50 calls gave a confidence
 *   interval half as wide as 60 rounds of 200).
 *
 * Beside the timings, counts that load does not move: bytes allocated per call (the young
 * generation's growth over a wave with no collection in it, see {@link youngBytes}) and promises
 * and timers made per call (`async_hooks`).
 */
import { createHook } from 'node:async_hooks';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, realpathSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as v8 from 'node:v8';
import type { createSwitchboard } from '../src';
import { fixed, median, quantile } from './util';

/** One way of making the call being measured. */
export interface PairedSide {
  name: string;
  call(i: number): Promise<unknown>;
  /** Before each round (reset usage). */
  reset?(): void;
}

export interface PairedOptions {
  /** Recorded cycles: each side runs one round per cycle. */
  cycles: number;
  /** Calls per round. */
  calls: number;
  /** Calls in flight at once (a round is `calls / inflight` waves). */
  inflight: number;
  /** Unrecorded cycles first (JIT, caches). */
  warmup: number;
}

/** The median of paired differences with its spread, in µs per call. */
export interface PairedDifference {
  median: number;
  q1: number;
  q3: number;
  /** 95 % confidence interval of the median. */
  ciLow: number;
  ciHigh: number;
}

export interface SideFigures {
  /** Median CPU per call, µs. */
  cpuUs: number;
  /** Median CPU per call of the calls' synchronous part (up to the returned promise), µs. */
  syncUs: number;
  /** Against the reference side (the last), per call; absent for the reference. */
  diff?: PairedDifference;
  syncDiff?: PairedDifference;
  /** Bytes allocated per call (median over waves without a collection); NaN if none was clean. */
  bytes: number;
  promises: number;
  timers: number;
}

export interface PairedFigures {
  cycles: number;
  calls: number;
  inflight: number;
  sides: Record<string, SideFigures>;
  /** CPU µs per call of each recorded round, by side, in cycle order (for other pairings). */
  rounds: Record<string, number[]>;
}

type Gc = (options?: { type?: 'minor' | 'major'; execution?: 'sync' | 'async' }) => void;
const gcFn = (): Gc | undefined => (globalThis as { gc?: Gc }).gc;

/** A minor collection, where `--expose-gc` allows one. */
export function scavenge(): void {
  gcFn()?.({ type: 'minor', execution: 'sync' });
}

/** One round of a side: CPU µs per call, all of it and its synchronous part. */
async function round(side: PairedSide, o: PairedOptions): Promise<{ cpu: number; sync: number }> {
  side.reset?.();
  scavenge();
  let syncUs = 0;
  const wave: Array<Promise<unknown>> = new Array(o.inflight);
  const c0 = process.cpuUsage();
  for (let i = 0; i < o.calls; i += o.inflight) {
    const n = Math.min(o.inflight, o.calls - i);
    wave.length = n;
    const s0 = process.cpuUsage();
    for (let j = 0; j < n; j++) wave[j] = side.call(i + j);
    const s = process.cpuUsage(s0);
    syncUs += s.user + s.system;
    await Promise.all(wave);
  }
  const c = process.cpuUsage(c0);
  return { cpu: (c.user + c.system) / o.calls, sync: syncUs / o.calls };
}

/** Order of the sides in cycle `k`: rotated by one each cycle, reversed every other. */
function order<T>(sides: readonly T[], k: number): T[] {
  const n = sides.length;
  const rotated = sides.map((_, i) => sides[(i + k) % n]!);
  return Math.floor(k / n) % 2 === 0 ? rotated : rotated.reverse();
}

/**
 * A distribution-free 95 % confidence interval of the median of `xs`: the order statistics
 * `j` and `n + 1 - j`, with `j` the largest for which P(Binomial(n, 1/2) < j) ≤ 2.5 %.
 */
export function medianInterval(xs: readonly number[]): [number, number] {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  if (n < 6) return [s[0] ?? NaN, s[n - 1] ?? NaN];
  let cdf = 0;
  let p = 0.5 ** n;
  let j = 0;
  // cdf = P(X <= j - 1); grow j while P(X <= j) stays within 2.5 %.
  for (let k = 0; k < n; k++) {
    if (cdf + p > 0.025) break;
    cdf += p;
    j = k + 1;
    p = (p * (n - k)) / (k + 1);
  }
  const lo = Math.max(0, j - 1);
  return [s[lo]!, s[n - 1 - lo]!];
}

const signed = (x: number, digits: number) => `${x >= 0 ? '+' : ''}${fixed(x, digits)}`;

/** Side `a` against side `b` of the same run, round by round (µs per call). */
export function pairedDifference(f: PairedFigures, a: string, b: string): PairedDifference {
  const x = f.rounds[a]!;
  const y = f.rounds[b]!;
  return difference(x.map((v, k) => v - y[k]!));
}

/** One line saying how two sides of a run compare, pair by pair. */
export function versusLine(f: PairedFigures, a: string, b: string): string {
  const d = pairedDifference(f, a, b);
  return (
    `${a} - ${b}: ${signed(d.median, 2)} µs CPU per call (median of the paired differences; ` +
    `IQR ${fixed(d.q1, 2)}..${fixed(d.q3, 2)}, 95% CI ${fixed(d.ciLow, 2)}..${fixed(d.ciHigh, 2)})`
  );
}

function difference(xs: readonly number[]): PairedDifference {
  const [ciLow, ciHigh] = medianInterval(xs);
  return {
    median: median(xs),
    q1: quantile(xs, 0.25),
    q3: quantile(xs, 0.75),
    ciLow,
    ciHigh,
  };
}

/**
 * What the young generation holds, in bytes: where a call's objects are made (V8 makes an object
 * in the old generation at once only for an allocation site whose objects kept surviving, which
 * short waves do not make). The heap's whole use also grows by what the compiler makes meanwhile
 * (code, feedback), which moved a side's figure by up to 3 KB a call between runs; the young
 * generation's growth repeats within some 20 bytes in a run.
 */
function youngBytes(): number {
  let used = 0;
  for (const space of v8.getHeapSpaceStatistics()) {
    if (space.space_name === 'new_space' || space.space_name === 'new_large_object_space') {
      used += space.space_used_size;
    }
  }
  return used;
}

/** Bytes allocated per call, over waves of `calls` with no collection in them. */
async function bytesPerCall(side: PairedSide, calls: number, tries = 7): Promise<number> {
  const Profiler = (v8 as { GCProfiler?: new () => { start(): void; stop(): unknown } }).GCProfiler;
  if (Profiler === undefined || gcFn() === undefined) return NaN;
  const clean: number[] = [];
  for (let t = 0; t < tries * 2 && clean.length < tries; t++) {
    side.reset?.();
    scavenge();
    const profiler = new Profiler();
    profiler.start();
    const h0 = youngBytes();
    const wave: Array<Promise<unknown>> = new Array(calls);
    for (let j = 0; j < calls; j++) wave[j] = side.call(j);
    await Promise.all(wave);
    const h1 = youngBytes();
    const stats = profiler.stop() as { statistics?: unknown[] } | undefined;
    if ((stats?.statistics?.length ?? 1) === 0) clean.push((h1 - h0) / calls);
  }
  return clean.length === 0 ? NaN : median(clean);
}

/** Promises and timers made per call, over one wave. */
async function asyncResources(
  side: PairedSide,
  calls: number,
): Promise<{ promises: number; timers: number }> {
  let promises = 0;
  let timers = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') promises++;
      else if (type === 'Timeout') timers++;
    },
  });
  side.reset?.();
  const wave: Array<Promise<unknown>> = new Array(calls);
  hook.enable();
  try {
    for (let j = 0; j < calls; j++) wave[j] = side.call(j);
    await Promise.all(wave);
  } finally {
    hook.disable();
  }
  return { promises: promises / calls, timers: timers / calls };
}

/**
 * Runs the sides in alternating rounds; the last side is the reference the others are compared
 * with, pair by pair (the rounds of one cycle).
 *
 * @example
 * ```ts
 * const figures = await paired([{ name: 'switchboard', call: viaSb }, { name: 'direct', call: direct }],
 *   { cycles: 60, calls: 200, inflight: 50, warmup: 5 });
 * ```
 */
export async function paired(
  sides: readonly PairedSide[],
  o: PairedOptions,
): Promise<PairedFigures> {
  const cpu = sides.map((): number[] => []);
  const sync = sides.map((): number[] => []);
  for (let k = 0; k < o.warmup + o.cycles; k++) {
    for (const i of order(
      sides.map((_, i) => i),
      k,
    )) {
      const r = await round(sides[i]!, o);
      if (k < o.warmup) continue;
      cpu[i]!.push(r.cpu);
      sync[i]!.push(r.sync);
    }
  }
  const ref = sides.length - 1;
  const out: PairedFigures = {
    cycles: o.cycles,
    calls: o.calls,
    inflight: o.inflight,
    sides: {},
    rounds: {},
  };
  for (let i = 0; i < sides.length; i++) {
    const counts = await asyncResources(sides[i]!, o.inflight);
    const figures: SideFigures = {
      cpuUs: median(cpu[i]!),
      syncUs: median(sync[i]!),
      bytes: await bytesPerCall(sides[i]!, Math.min(o.inflight, 50)),
      ...counts,
    };
    if (i !== ref) {
      figures.diff = difference(cpu[i]!.map((v, k) => v - cpu[ref]![k]!));
      figures.syncDiff = difference(sync[i]!.map((v, k) => v - sync[ref]![k]!));
    }
    out.sides[sides[i]!.name] = figures;
    out.rounds[sides[i]!.name] = cpu[i]!;
  }
  return out;
}

/** Table rows of {@link paired}'s figures, one per side, under {@link PAIRED_HEADER}. */
export function pairedRows(label: string, f: PairedFigures): string[][] {
  return Object.entries(f.sides).map(([name, s]) => [
    `${label}${name}`,
    fixed(s.cpuUs, 1),
    s.diff ? signed(s.diff.median, 2) : '',
    s.diff ? `${fixed(s.diff.q1, 2)}..${fixed(s.diff.q3, 2)}` : '',
    s.diff ? `${fixed(s.diff.ciLow, 2)}..${fixed(s.diff.ciHigh, 2)}` : '',
    fixed(s.syncUs, 2),
    s.syncDiff ? signed(s.syncDiff.median, 2) : '',
    Number.isFinite(s.bytes) ? String(Math.round(s.bytes)) : '-',
    fixed(s.promises, 1),
    fixed(s.timers, 2),
  ]);
}

export const PAIRED_HEADER = [
  'median per round',
  'CPU µs/call',
  'diff',
  'diff IQR',
  'diff 95% CI',
  'sync µs',
  'sync diff',
  'bytes/call',
  'promises',
  'timers',
];

/** How the rounds were run, for the sections' headings. */
export const pairedNote = (o: PairedOptions): string =>
  `${o.cycles} cycles (after ${o.warmup} unrecorded) of one round per side, ${o.calls} calls a ` +
  `round in waves of ${o.inflight}, the order rotating and reversing each cycle; a minor GC ` +
  `before every round${gcFn() ? '' : ' (not available: run with node --expose-gc)'}. ` +
  `diff = median of the paired differences of CPU per call against the last row (µs).`;

/** What the comparison needs of a checkout of the library: its `createSwitchboard`. */
export type CreateSwitchboard = typeof createSwitchboard;

/**
 * `--against DIR`: the `createSwitchboard` of another checkout of this library (its `src/`,
 * compiled as this one is), to run beside this one in the same process: e.g. the main line's
 * code, exported with `git archive main | tar -x -C /tmp/main` and given this checkout's
 * `node_modules` (a symbolic link), so both use the same SDK modules. `--against REV` (a git
 * revision of this repository, `main`, `HEAD~1`, a hash) does that export itself, once per commit.
 *
 * @example
 * ```ts
 * const before = loadAgainst('HEAD~1'); // the commit before, beside this checkout
 * ```
 */
export function loadAgainst(dirOrRev: string | undefined): CreateSwitchboard | undefined {
  if (dirOrRev === undefined) return undefined;
  const dir = checkoutOf(dirOrRev);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const lib = require(resolve(dir, 'src')) as {
    createSwitchboard?: CreateSwitchboard;
  };
  if (typeof lib.createSwitchboard !== 'function') {
    throw new Error(`--against ${dirOrRev}: its src/ exports no createSwitchboard`);
  }
  return lib.createSwitchboard;
}

/**
 * The directory of `dirOrRev`: itself when it is one, else the tree of that git revision,
 * exported under the temporary directory with a link to this checkout's `node_modules`.
 */
function checkoutOf(dirOrRev: string): string {
  if (existsSync(dirOrRev)) return dirOrRev;
  let commit: string;
  try {
    commit = execFileSync('git', ['rev-parse', '--verify', '--quiet', `${dirOrRev}^{commit}`], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    throw new Error(`--against ${dirOrRev}: neither a directory nor a git revision of this one`);
  }
  const dir = join(tmpdir(), `switchboard-against-${commit.slice(0, 12)}`);
  // Reused while its link still reaches a node_modules: the checkout it was made from may be gone.
  if (existsSync(join(dir, 'src')) && existsSync(join(dir, 'node_modules', 'openai'))) return dir;
  rmSync(dir, { recursive: true, force: true });
  // Exported beside its final place and renamed there: an interrupted export is never reused.
  const partial = `${dir}.${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  const tree = execFileSync('git', ['archive', '--format=tar', commit], {
    maxBuffer: 1 << 30,
  });
  execFileSync('tar', ['-x', '-C', partial], { input: tree });
  symlinkSync(realpathSync('node_modules'), join(partial, 'node_modules'));
  renameSync(partial, dir);
  return dir;
}

/** Small numeric and formatting helpers of the benchmark. */
import { join } from 'node:path';
import type { SwitchboardLogger } from '../src';

/**
 * The preload every bench process runs its TypeScript with (`node --require TS_REGISTER x.ts`):
 * ts-node's transpile-only compile, kept on disk, so the dozen processes a run starts compile the
 * sources once. Nor does it load Node's `repl` and `domain` as ts-node does (which would run every
 * event of every emitter through `domain`'s code), so a measured process runs as compiled
 * JavaScript would.
 */
export const TS_REGISTER = join(__dirname, '..', 'test', 'support', 'ts-register.js');

export function mean(xs: readonly number[]): number {
  return xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}

export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

export const median = (xs: readonly number[]): number => quantile(xs, 0.5);

/** Population standard deviation, as the original's histogram prints it. */
export function stddev(xs: readonly number[]): number {
  const m = mean(xs);
  return Math.sqrt(mean(xs.map((x) => (x - m) ** 2)));
}

export { seededRandom as seeded } from '../src/testing';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Forces a full collection when node runs with --expose-gc. */
export function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/**
 * Before a timed round of the switchboard-vs-SDK comparison. By default nothing: a full
 * collection with no call in flight lets V8 collect the shapes (maps) of the last round's objects,
 * and with them it throws away every optimized function built on them ("weak objects" deopts, some
 * 80 functions a round of both the SDK and the switchboard under `--trace-deopt`), so each round
 * would start over in unoptimized code, a state no server under traffic is in. `--forced-gc` asks
 * for it anyway.
 */
export function roundStart(args: { forcedGc: boolean }): void {
  if (args.forcedGc) gc();
}

/** How the comparison's rounds follow each other, for the sections' headings. */
export const gcNote = (args: { forcedGc: boolean }): string =>
  args.forcedGc ? 'forced full GC before each round' : 'no forced GC between rounds';

export const hasGc = (): boolean => typeof (globalThis as { gc?: unknown }).gc === 'function';

export const fixed = (x: number, digits = 2): string =>
  Number.isFinite(x) ? x.toFixed(digits) : '-';

export const pct = (x: number, digits = 1): string => `${fixed(x * 100, digits)} %`;

/** A logger that keeps the switchboard's warnings out of the report, counting them. */
export function quietLogger(): SwitchboardLogger & { warnings: number } {
  const logger = {
    warnings: 0,
    log: () => undefined,
    warn: () => {
      logger.warnings++;
    },
    error: () => undefined,
  };
  return logger;
}

/** Left-aligned table with a header row. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** The original's `print_usage_histogram`, ported: text bars over `stats()` utilizations. */
import type { ModelStats } from '../src';
import { mean, stddev } from './util';

/** Every `util` of a `stats()` result. */
export function utilizations(stats: Record<string, Record<string, ModelStats>>): number[] {
  const out: number[] = [];
  for (const models of Object.values(stats))
    for (const s of Object.values(models)) out.push(s.util);
  return out;
}

/** The histogram as the original prints it (same bins, bar width, labels and rounding). */
export function histogram(
  utils: readonly number[],
  options: { width?: number; bins?: number; absolute?: boolean } = {},
): string {
  const { width = 30, bins = 10, absolute = false } = options;
  if (utils.length === 0) return 'No utilization data available';
  let lo = absolute ? 0 : Math.min(...utils);
  let hi = absolute ? 1 : Math.max(...utils);
  if (lo === hi && !absolute) {
    lo = Math.max(0, lo - 0.05);
    hi = Math.min(1, hi + 0.05);
  }
  const counts = new Array<number>(bins).fill(0);
  const range = hi - lo;
  // On the absolute scale, utilizations above 1 get a line of their own rather than the top bin.
  let over = 0;
  for (const u of utils) {
    if (absolute && u > hi) over++;
    else if (range > 0)
      counts[Math.min(Math.max(0, Math.floor(((u - lo) / range) * bins)), bins - 1)]!++;
  }
  const maxCount = Math.max(...counts);
  const lines = ['Utilization Distribution:'];
  for (let i = 0; i < bins; i++) {
    const start = lo + (i / bins) * range;
    const end = lo + ((i + 1) / bins) * range;
    const bar = '.'.repeat(maxCount > 0 ? Math.round((width * counts[i]!) / maxCount) : 0);
    lines.push(`${start.toFixed(3)} - ${end.toFixed(3)} | ${String(counts[i]).padStart(3)} ${bar}`);
  }
  if (over > 0) {
    const bar = '.'.repeat(Math.round((width * over) / Math.max(maxCount, over)));
    lines.push(`above ${hi.toFixed(3)}   | ${String(over).padStart(3)} ${bar}`);
  }
  const avg = mean(utils);
  lines.push(
    `Avg utilization: ${avg.toFixed(3)} (${Math.min(...utils).toFixed(3)} - ${Math.max(...utils).toFixed(3)})`,
  );
  if (utils.length > 1) lines.push(`Std deviation: ${stddev(utils).toFixed(3)}`);
  return lines.join('\n');
}

/**
 * The numbers selection reads on every draw, for one model on one deployment, kept in a row of a
 * shared `Float64Array` rather than in fields of its objects: a number field of a JavaScript
 * object that is not a small integer is a separate heap box, and with thousands of deployments
 * every object a draw visits is a cache miss. A row is 32 bytes, aligned, so one line holds it.
 *
 * - {@link FROM}, {@link UNTIL}: the clock readings (epoch ms) in `[from, until)` for which
 *   {@link UTIL} is the ledger's utilization (no time alone changes it there); `until` 0 = none;
 * - {@link UTIL}: that utilization;
 * - {@link COOL}: when the model's cooldown ends (epoch ms, 0 = none).
 *
 * @example
 * ```ts
 * const { table, row } = hotRow();
 * table[row + UNTIL] = 0; // the utilization kept there no longer holds
 * ```
 */
export interface HotRow {
  readonly table: Float64Array;
  /** Index of the row's first number in {@link table}. */
  readonly row: number;
}

export const FROM = 0;
export const UNTIL = 1;
export const UTIL = 2;
export const COOL = 3;

/** Numbers per row. */
const WIDTH = 4;
/** Rows per table: 32 KB, so that neighbouring models share pages. */
const ROWS = 1024;

let table = new Float64Array(ROWS * WIDTH);
let next = 0;

/** A fresh row, all 0 (no utilization kept, no cooldown). */
export function hotRow(): HotRow {
  if (next === ROWS) {
    table = new Float64Array(ROWS * WIDTH);
    next = 0;
  }
  return { table, row: WIDTH * next++ };
}

/** The utilization kept in `hot` no longer holds: a charge, an answer or a limit changed it. */
export function forget(hot: HotRow): void {
  hot.table[hot.row + UNTIL] = 0;
}

/** The utilization kept in `hot` when it holds at `now`, else -1. */
export function keptUtil(hot: HotRow, now: number): number {
  const { table, row } = hot;
  return now < table[row + UNTIL]! && now >= table[row + FROM]! ? table[row + UTIL]! : -1;
}

/** Keep `util` for the clock readings in `[from, until)`. */
export function keep(hot: HotRow, util: number, from: number, until: number): void {
  const { table, row } = hot;
  table[row + UTIL] = util;
  table[row + FROM] = from;
  table[row + UNTIL] = until;
}

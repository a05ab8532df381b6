import { chargeOf, type Admission, type ChargeUnit } from './admission';
import type { LimitCounter } from './limit-counter';

/**
 * The numbers selection reads on every draw, for one model on one deployment, kept in a row of a
 * `Float64Array` shared by the models of one registry ({@link hotRows}) rather than in fields of
 * its objects: a number field of a JavaScript object that is not a small integer is a separate
 * heap box, and with thousands of deployments every object a draw visits is a cache miss. A row
 * is 64 bytes: a draw that reads only the row (see {@link keptRoom}, {@link keptLoad}) touches
 * one line of memory per deployment. The table lives as long as the rows that hold it, so it goes
 * with its registry.
 *
 * - {@link FROM}, {@link UNTIL}: the clock readings (epoch ms) in `[from, until)` for which the
 *   rest of the row is the ledger's answer (no time alone changes it there); `until` 0 = none;
 * - {@link UTIL}: the utilization;
 * - {@link COOL}: when the model's cooldown ends (epoch ms, 0 = none; it holds whatever `until`);
 * - {@link TOKENS}, {@link REQUESTS}, {@link INPUT}, {@link OUTPUT}: the largest charge each kind
 *   of limit still takes (a call fits where its charge is at most that), `Infinity` with no limit
 *   in force; `REQUESTS` is the smaller of the window's and Azure's 10-s window's.
 *
 * @example
 * ```ts
 * const { table, row } = hotRow();
 * table[row + UNTIL] = 0; // what the row keeps no longer holds
 * ```
 */
export interface HotRow {
  readonly table: Float64Array;
  /** Index of the row's first number in {@link table}. */
  readonly row: number;
}

const FROM = 0;
export const UNTIL = 1;
const UTIL = 2;
export const COOL = 3;
export const TOKENS = 4;
const REQUESTS = 5;
const INPUT = 6;
const OUTPUT = 7;
/** The column each counter keeps its room in: the one of what it counts. */
const ROOM: Readonly<Record<ChargeUnit, number>> = {
  tokens: TOKENS,
  requests: REQUESTS,
  input: INPUT,
  output: OUTPUT,
};
/**
 * Output tokens an uncapped call is charged per output here (the model's `outputReservation`), or
 * -1 when the model prices a call otherwise (Claude's expected output): read only for uncapped
 * calls, so it may sit past the row's first line of memory.
 */
export const RESERVE = 8;

/** Numbers per row: two lines of memory, the first holding all that a capped call's draw reads. */
const WIDTH = 16;

/**
 * `count` fresh rows, all 0 (nothing kept, no cooldown), in one table of their own, one after
 * another: a registry's models, so that a pool's rows share pages and are freed with it.
 *
 * @example
 * ```ts
 * const rows = hotRows(configs.reduce((n, c) => n + c.models.length, 0));
 * new ModelState(model, 'east', clock, { hot: rows[0] });
 * ```
 */
export function hotRows(count: number): HotRow[] {
  const table = new Float64Array(WIDTH * count);
  return Array.from({ length: count }, (_, i) => ({ table, row: WIDTH * i }));
}

/** A fresh row in a table of its own, for a model that no registry built. */
export function hotRow(): HotRow {
  return hotRows(1)[0]!;
}

/** What `hot` keeps no longer holds: a charge, an answer or a limit changed it. */
export function forget(hot: HotRow): void {
  hot.table[hot.row + UNTIL] = 0;
}

/** Whether what the row at `row` of `table` keeps holds at `now`. */
function holds(table: Float64Array, row: number, now: number): boolean {
  return now < table[row + UNTIL]! && now >= table[row + FROM]!;
}

/** ms from `now` until what `hot` keeps lapses (0 when it does not hold). */
export function keptFor(hot: HotRow, now: number): number {
  const { table, row } = hot;
  return holds(table, row, now) ? table[row + UNTIL]! - now : 0;
}

/** The utilization kept in `hot` when it holds at `now`, else -1. */
export function keptUtil(hot: HotRow, now: number): number {
  const { table, row } = hot;
  return holds(table, row, now) ? table[row + UTIL]! : -1;
}

/**
 * The utilization at `now` of the `gating` counters (those with a limit in force): the largest
 * share. With `keeps`, it is kept in `hot` with each limit's room until the first time any of
 * them can change by time alone; without (others' usage changes with time), nothing is.
 */
export function measure(
  hot: HotRow,
  gating: readonly LimitCounter[],
  now: number,
  keeps: boolean,
): number {
  let util = 0;
  let until = keeps ? Infinity : now;
  for (const counter of gating) {
    const share = counter.share(now);
    if (share > util) util = share;
    if (until > now) {
      const t = counter.changesAt(now);
      if (t < until) until = t;
    }
  }
  const { table, row } = hot;
  table[row + UTIL] = util;
  table[row + FROM] = now;
  table[row + UNTIL] = until;
  if (until <= now) return util;
  // While the row holds, a draw reads each limit's room there instead of asking the counters.
  table[row + TOKENS] = Infinity;
  table[row + REQUESTS] = Infinity;
  table[row + INPUT] = Infinity;
  table[row + OUTPUT] = Infinity;
  for (const counter of gating) {
    const at = row + ROOM[counter.unit];
    const room = counter.room(now);
    if (room < table[at]!) table[at] = room;
  }
  return util;
}

/**
 * The load a draw weighs, from the row alone: 1 while cooling, else the kept utilization; -1 when
 * the row does not hold at `now` (ask the model).
 */
export function keptLoad(table: Float64Array, row: number, now: number): number {
  if (now < table[row + COOL]!) return 1;
  return holds(table, row, now) ? table[row + UTIL]! : -1;
}

/**
 * `ModelState.hasRoomAt(admission, now)` (with `admission`) or `isHealthy()` (without), from the
 * row alone: 1 yes, 0 no, -1 when the row cannot tell (it does not hold at `now`, or the call keeps
 * a reserve: ask the model). A cooling model has no room whatever the row keeps.
 */
export function keptRoom(
  table: Float64Array,
  row: number,
  admission: Admission | undefined,
  now: number,
): number {
  if (now < table[row + COOL]!) return 0;
  if (!holds(table, row, now)) return -1;
  if (admission === undefined) return table[row + UTIL]! < 1 ? 1 : 0;
  if (admission.reserve !== undefined && admission.reserve > 0) return -1;
  // A call over a cached prefix is charged what that deployment has not cached, a call priced by
  // one deployment afresh as the next prices it: the model prices them.
  if (admission.cachePrefix !== undefined || admission.askedInput !== undefined) return -1;
  const { input, uncapped } = admission;
  if (uncapped === undefined) return fits(table, row, input, admission.output) ? 1 : 0;
  // An uncapped call is charged this deployment's own reservation for each of its outputs.
  const reserve = table[row + RESERVE]!;
  if (reserve < 0) return -1;
  return fits(table, row, input, reserve * uncapped) ? 1 : 0;
}

/**
 * Whether a call with this admission charge (keeping no reserve) fits the room each limit has
 * left, as kept in the row: the ledger's own answer while the row holds.
 */
export function fitsRoom(table: Float64Array, row: number, admission: Admission): boolean {
  return fits(table, row, admission.input, admission.output);
}

function fits(table: Float64Array, row: number, input: number, output: number): boolean {
  return (
    chargeOf('tokens', input, output) <= table[row + TOKENS]! &&
    chargeOf('requests', input, output) <= table[row + REQUESTS]! &&
    chargeOf('input', input, output) <= table[row + INPUT]! &&
    chargeOf('output', input, output) <= table[row + OUTPUT]!
  );
}

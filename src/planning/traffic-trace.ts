import { closeSync, readSync } from 'node:fs';
import { forEachLine, openRegularFile } from '../config/read-bounded-file';
import { TrafficFileError } from './traffic-file.error';

/**
 * A recorded traffic file, one column per field (37 bytes a call: a million calls take 37 MB,
 * not a million objects), in arrival order.
 *
 * @example
 * ```ts
 * const trace = readTraffic('traffic.jsonl');
 * trace.models[trace.model[0]]; // 'gpt-4o-mini'
 * ```
 */
export interface TrafficTrace {
  readonly count: number;
  /** Arrival (epoch ms), ascending. */
  readonly t: Float64Array;
  /** Index into {@link models}. */
  readonly model: Uint32Array;
  readonly input: Uint32Array;
  readonly cached: Uint32Array;
  readonly output: Uint32Array;
  /** The output cap; -1 where the call set none. */
  readonly maxTokens: Int32Array;
  /** 0 interactive, 1 batch. */
  readonly lane: Uint8Array;
  /** Index into {@link tenants}; 0 is the empty tenant. */
  readonly tenant: Uint32Array;
  /** Recorded latency (ms); -1 where the line has none. */
  readonly latency: Float32Array;
  readonly models: readonly string[];
  readonly tenants: readonly string[];
  /** How many lines have an earlier time than the line before them (the calls were sorted). */
  readonly outOfOrder: number;
}

/**
 * The longest traffic line read: a recorded line is a few hundred bytes (long tenant ids are
 * written as their hash); a longer one is not a recorded call, and is refused by its number
 * before more of it is held.
 */
export const MAX_TRAFFIC_LINE_BYTES = 16 * 1024;

/**
 * Reads a traffic file written by `recordTraffic` (or converted to its shape), line by line: its
 * memory is the columns of its calls, never its text. Anything but a regular file (`/dev/zero`,
 * a FIFO) is refused before a byte is read. Blank lines are skipped; a line that is not a JSON
 * object of the documented shape, or longer than {@link MAX_TRAFFIC_LINE_BYTES}, stops the
 * reading with a {@link TrafficFileError} naming its line number; lines out of time order are
 * sorted (stably).
 *
 * @example
 * ```ts
 * const trace = readTraffic('traffic.jsonl');
 * ```
 */
export function readTraffic(file: string): TrafficTrace {
  let opened: { fd: number; size: number };
  try {
    opened = openRegularFile(file);
  } catch (error) {
    throw new TrafficFileError(file, 0, `cannot be read (${(error as Error).message})`);
  }
  const { fd } = opened;
  try {
    // Counted first, so that the columns are allocated once, at their size.
    const builder = new TraceBuilder(file, countLines(fd) + 1);
    forEachLine(
      fd,
      MAX_TRAFFIC_LINE_BYTES,
      (text, n) => builder.add(text, n),
      (n) =>
        new TrafficFileError(
          file,
          n,
          `is longer than ${MAX_TRAFFIC_LINE_BYTES} bytes: not a recorded call`,
        ),
    );
    return builder.finish();
  } catch (error) {
    if (error instanceof TrafficFileError) throw error;
    throw new TrafficFileError(file, 0, `cannot be read (${(error as Error).message})`);
  } finally {
    closeSync(fd);
  }
}

/** How many line breaks the open file holds; its position is back at the start after. */
function countLines(fd: number): number {
  const chunk = Buffer.allocUnsafe(1024 * 1024);
  let lines = 0;
  let position = 0;
  for (let n = readSync(fd, chunk, 0, chunk.length, 0); n > 0;) {
    for (let at = chunk.indexOf(0x0a); at !== -1 && at < n; at = chunk.indexOf(0x0a, at + 1)) {
      lines++;
    }
    position += n;
    n = readSync(fd, chunk, 0, chunk.length, position);
  }
  return lines;
}

/** The most tokens a count of one call may be: what the columns hold (no model comes near). */
const MAX_TOKENS = 2 ** 31 - 1;

/** The latest time a JavaScript `Date` holds (epoch ms): a report prints every time as a date. */
const MAX_DATE_MS = 8.64e15;

/** {@link readTraffic} of a file's text; `file` names it in errors. */
export function parseTraffic(text: string, file = 'traffic'): TrafficTrace {
  const builder = new TraceBuilder(file, 1024);
  let lineNo = 0;
  for (let start = 0; start < text.length;) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    builder.add(text.slice(start, end), ++lineNo);
    start = end + 1;
  }
  return builder.finish();
}

/** The columns of a trace, filled one line at a time. */
class TraceBuilder {
  private cols: Columns;
  private readonly models = new Map<string, number>();
  private readonly tenants = new Map<string, number>([['', 0]]);
  private count = 0;
  private outOfOrder = 0;
  private last = -Infinity;

  constructor(
    private readonly file: string,
    private capacity: number,
  ) {
    this.cols = columns(capacity);
  }

  add(raw: string, lineNo: number): void {
    if (raw.trim() === '') return;
    const { file } = this;
    let v: unknown;
    try {
      v = JSON.parse(raw);
    } catch (error) {
      throw new TrafficFileError(file, lineNo, `not a JSON line (${(error as Error).message})`);
    }
    const bad = (problem: string) => new TrafficFileError(file, lineNo, problem);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) {
      throw bad('must be a JSON object such as {"t": 1767225600000, "model": "gpt-4o", ...}');
    }
    const o = v as Record<string, unknown>;
    if (typeof o.t !== 'number' || !(o.t >= 0 && o.t <= MAX_DATE_MS)) {
      throw bad(`"t" must be the arrival time in epoch milliseconds (0 to ${MAX_DATE_MS})`);
    }
    if (typeof o.model !== 'string' || o.model === '') {
      throw bad('"model" must be the model name the call asked for');
    }
    if (this.count === this.capacity) {
      this.capacity *= 2;
      this.cols = grow(this.cols, this.capacity);
    }
    const { cols } = this;
    const i = this.count++;
    cols.t[i] = o.t;
    if (o.t < this.last) this.outOfOrder++;
    this.last = o.t;
    cols.model[i] = indexOf(this.models, o.model);
    cols.input[i] = tokens(o.input_tokens, 'input_tokens', bad, true);
    cols.cached[i] = tokens(o.cached_tokens, 'cached_tokens', bad, false);
    cols.output[i] = tokens(o.output_tokens, 'output_tokens', bad, true);
    cols.maxTokens[i] = o.max_tokens === undefined ? -1 : tokens(o.max_tokens, 'max_tokens', bad);
    if (o.lane !== undefined && o.lane !== 'interactive' && o.lane !== 'batch') {
      throw bad(`"lane" must be "interactive" or "batch"`);
    }
    cols.lane[i] = o.lane === 'batch' ? 1 : 0;
    if (o.tenant !== undefined && typeof o.tenant !== 'string') {
      throw bad('"tenant" must be a string');
    }
    cols.tenant[i] = o.tenant === undefined ? 0 : indexOf(this.tenants, o.tenant);
    if (o.latency_ms === undefined) cols.latency[i] = -1;
    else if (
      typeof o.latency_ms !== 'number' ||
      !Number.isFinite(o.latency_ms) ||
      o.latency_ms < 0
    ) {
      throw bad('"latency_ms" must be a number of milliseconds >= 0');
    } else cols.latency[i] = o.latency_ms;
    if (o.status !== undefined && typeof o.status !== 'number') {
      throw bad('"status" must be an HTTP status number');
    }
  }

  finish(): TrafficTrace {
    const { count, outOfOrder } = this;
    if (count === 0) throw new TrafficFileError(this.file, 0, 'holds no calls');
    let cols = count === this.capacity ? this.cols : trimmed(this.cols, count);
    if (outOfOrder > 0) cols = sorted(cols, count);
    return {
      count,
      ...cols,
      models: [...this.models.keys()],
      tenants: [...this.tenants.keys()],
      outOfOrder,
    };
  }
}

interface Columns {
  t: Float64Array;
  model: Uint32Array;
  input: Uint32Array;
  cached: Uint32Array;
  output: Uint32Array;
  maxTokens: Int32Array;
  lane: Uint8Array;
  tenant: Uint32Array;
  latency: Float32Array;
}

function columns(n: number): Columns {
  return {
    t: new Float64Array(n),
    model: new Uint32Array(n),
    input: new Uint32Array(n),
    cached: new Uint32Array(n),
    output: new Uint32Array(n),
    maxTokens: new Int32Array(n),
    lane: new Uint8Array(n),
    tenant: new Uint32Array(n),
    latency: new Float32Array(n),
  };
}

/** The columns copied into arrays of length `n` (longer or shorter). */
function grow(c: Columns, n: number): Columns {
  const out = columns(n);
  for (const key of Object.keys(c) as (keyof Columns)[]) {
    const from = c[key];
    (out[key] as { set(a: ArrayLike<number>): void }).set(
      from.length > n ? from.subarray(0, n) : from,
    );
  }
  return out;
}

/**
 * The columns reordered by arrival time, ties in file order, in place one column at a time: at
 * most one column more than the trace is held.
 */
function sorted(c: Columns, n: number): Columns {
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  order.sort((a, b) => c.t[a]! - c.t[b]! || a - b);
  for (const key of Object.keys(c) as (keyof Columns)[]) {
    const from = c[key];
    const copy = new (from.constructor as new (length: number) => typeof from)(n);
    for (let i = 0; i < n; i++) copy[i] = from[order[i]!]!;
    (c as Record<keyof Columns, unknown>)[key] = copy;
  }
  return c;
}

/** The first `n` rows of each column, as views: no copy. */
function trimmed(c: Columns, n: number): Columns {
  const out = { ...c };
  for (const key of Object.keys(c) as (keyof Columns)[]) {
    (out as Record<keyof Columns, unknown>)[key] = c[key].subarray(0, n);
  }
  return out;
}

function indexOf(map: Map<string, number>, key: string): number {
  let i = map.get(key);
  if (i === undefined) {
    i = map.size;
    map.set(key, i);
  }
  return i;
}

function tokens(
  v: unknown,
  name: string,
  bad: (problem: string) => Error,
  required = false,
): number {
  if (v === undefined && !required) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX_TOKENS) {
    throw bad(`"${name}" must be a whole number of tokens from 0 to ${MAX_TOKENS}`);
  }
  return v;
}

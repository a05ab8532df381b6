import { readFileSync } from 'node:fs';
import { TrafficFileError } from './traffic-file.error';

/**
 * A recorded traffic file, one column per field (a million calls take tens of megabytes, not a
 * million objects), in arrival order.
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
  readonly input: Float64Array;
  readonly cached: Float64Array;
  readonly output: Float64Array;
  /** The output cap; -1 where the call set none. */
  readonly maxTokens: Float64Array;
  /** 0 interactive, 1 batch. */
  readonly lane: Uint8Array;
  /** Index into {@link tenants}; 0 is the empty tenant. */
  readonly tenant: Uint32Array;
  /** Recorded latency (ms); -1 where the line has none. */
  readonly latency: Float64Array;
  readonly models: readonly string[];
  readonly tenants: readonly string[];
  /** How many lines have an earlier time than the line before them (the calls were sorted). */
  readonly outOfOrder: number;
}

/**
 * Reads a traffic file written by `recordTraffic` (or converted to its shape). Blank lines are
 * skipped; a line that is not a JSON object of the documented shape stops the reading with a
 * {@link TrafficFileError} naming its line number; lines out of time order are sorted (stably).
 *
 * @example
 * ```ts
 * const trace = readTraffic('traffic.jsonl');
 * ```
 */
export function readTraffic(file: string): TrafficTrace {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new TrafficFileError(file, 0, `cannot be read (${(error as Error).message})`);
  }
  return parseTraffic(text, file);
}

/** {@link readTraffic} of a file's text; `file` names it in errors. */
export function parseTraffic(text: string, file = 'traffic'): TrafficTrace {
  let capacity = 1024;
  let cols = columns(capacity);
  const models = new Map<string, number>();
  const tenants = new Map<string, number>([['', 0]]);
  let count = 0;
  let outOfOrder = 0;
  let lineNo = 0;
  let last = -Infinity;
  for (let start = 0; start < text.length;) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const raw = text.slice(start, end);
    start = end + 1;
    lineNo++;
    if (raw.trim() === '') continue;
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
    if (typeof o.t !== 'number' || !Number.isFinite(o.t) || o.t < 0) {
      throw bad('"t" must be the arrival time in epoch milliseconds');
    }
    if (typeof o.model !== 'string' || o.model === '') {
      throw bad('"model" must be the model name the call asked for');
    }
    if (count === capacity) {
      capacity *= 2;
      cols = grow(cols, capacity);
    }
    const i = count++;
    cols.t[i] = o.t;
    if (o.t < last) outOfOrder++;
    last = o.t;
    cols.model[i] = indexOf(models, o.model);
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
    cols.tenant[i] = o.tenant === undefined ? 0 : indexOf(tenants, o.tenant);
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
  if (count === 0) throw new TrafficFileError(file, 0, 'holds no calls');
  cols = grow(cols, count);
  if (outOfOrder > 0) cols = sorted(cols, count);
  return { count, ...cols, models: [...models.keys()], tenants: [...tenants.keys()], outOfOrder };
}

interface Columns {
  t: Float64Array;
  model: Uint32Array;
  input: Float64Array;
  cached: Float64Array;
  output: Float64Array;
  maxTokens: Float64Array;
  lane: Uint8Array;
  tenant: Uint32Array;
  latency: Float64Array;
}

function columns(n: number): Columns {
  return {
    t: new Float64Array(n),
    model: new Uint32Array(n),
    input: new Float64Array(n),
    cached: new Float64Array(n),
    output: new Float64Array(n),
    maxTokens: new Float64Array(n),
    lane: new Uint8Array(n),
    tenant: new Uint32Array(n),
    latency: new Float64Array(n),
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

/** The columns reordered by arrival time, ties in file order. */
function sorted(c: Columns, n: number): Columns {
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => c.t[a]! - c.t[b]! || a - b);
  const out = columns(n);
  for (const key of Object.keys(c) as (keyof Columns)[]) {
    const from = c[key];
    const to = out[key];
    for (let i = 0; i < n; i++) to[i] = from[order[i]!]!;
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
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    throw bad(`"${name}" must be a whole number of tokens >= 0`);
  }
  return v;
}

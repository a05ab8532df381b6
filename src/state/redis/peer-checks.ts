import type { SharedReading } from '../../quota/reading';
import type { PeerModelReport, PeerReport } from '../peer-report';
import {
  decodeReading,
  decodeUsage,
  READING_LENGTH,
  sumOthers,
  type PublishedUsage,
} from './redis-protocol';
import type { RawSyncReply } from './sync-script';

/**
 * What a value read from the store was skipped for; each is logged once.
 *
 * @example
 * ```ts
 * const kind: PeerProblem = 'usage-bound';
 * ```
 */
export type PeerProblem =
  | 'usage-unreadable'
  | 'usage-time'
  | 'usage-bucket-size'
  | 'usage-count'
  | 'usage-future'
  | 'usage-bound'
  | 'reading-unreadable'
  | 'reading-time'
  | 'reading-count'
  | 'cooldown-unreadable'
  | 'cooldown-cap'
  | 'key-type'
  | 'too-many-fields'
  | 'too-long';

/** One sentence per {@link PeerProblem}, for the log line. */
export const PEER_PROBLEMS: Readonly<Record<PeerProblem, string>> = {
  'usage-unreadable': 'skipped a usage value that is not `<time> <json>` of the expected shape',
  'usage-time': 'skipped usage written at a time that is not a number or ahead of this clock',
  'usage-bucket-size': 'skipped usage in buckets of an impossible size',
  'usage-count': 'skipped usage buckets that are not counts ≥ 0 (or too many of them)',
  'usage-future': 'skipped usage in buckets that start ahead of this clock',
  'usage-bound': 'skipped usage beyond what a window of traffic can reach at the limits known here',
  'reading-unreadable': 'skipped a rate-limit reading that is not an array of numbers',
  'reading-time': 'skipped a rate-limit reading with times outside the window',
  'reading-count':
    'skipped a rate-limit reading with counts below 0 or beyond the limits known here',
  'cooldown-unreadable': 'skipped a cooldown that is not a time',
  'cooldown-cap': 'capped to maxCooldown a cooldown longer than it',
  'key-type': 'skipped a key of the wrong type',
  'too-many-fields': 'skipped the fields beyond what one sync reads',
  'too-long': 'skipped values too long to be read',
};

/**
 * The limits this instance knows for one model (0 = not known), from which the bounds of what
 * the others may report follow, and the model's names.
 *
 * @example
 * ```ts
 * const m: PeerModelBounds = { deployment: 'east', model: 'gpt-4o', tokens: 100_000, requests: 600, input: 0, output: 0 };
 * ```
 */
export interface PeerModelBounds {
  deployment: string;
  model: string;
  /** tpm (or itpm + otpm where only those are known). */
  tokens: number;
  requests: number;
  input: number;
  output: number;
  /**
   * A quota pool's bounds: the models that draw on it, each told the pool's usage and readings
   * (its field is the pool's, not one model's).
   */
  members?: readonly { deployment: string; model: string }[];
}

/**
 * What {@link checkPeers} holds the store's values against.
 *
 * @example
 * ```ts
 * const bounds: PeerBounds = { now: Date.now(), windowMs: 60_000, skewMs: 5_000, maxCooldown: 86_400_000, models };
 * ```
 */
export interface PeerBounds {
  now: number;
  /** The sliding window (ms); 0 = usage is never reset. */
  windowMs: number;
  /** How far another machine's clock may run ahead of this one (ms). */
  skewMs: number;
  /** The longest cooldown (ms). */
  maxCooldown: number;
  /** The models this instance serves, by the store's field (`<deployment>:<model>`, URI-encoded). */
  models: ReadonlyMap<string, PeerModelBounds>;
}

/**
 * {@link checkPeers}' answer: the report, and per kind of problem the first value skipped for
 * it (clipped, for the log line).
 */
interface CheckedPeers {
  report: PeerReport;
  problems: Map<PeerProblem, string>;
}

/** How many times a known limit one instance's usage of a model may reach in a window. */
export const USAGE_FACTOR = 10;
/** Bounds where the limit is not known: more than any deployment's quota of a window. */
const UNKNOWN_TOKENS = 1e9;
const UNKNOWN_REQUESTS = 1e7;
/** Most buckets one instance publishes for one model (about 60 per window, a few windows). */
export const MAX_BUCKETS = 256;
/** Without a window, the longest bucket and reading window taken (ms). */
const NO_WINDOW = 3_600_000;

/**
 * Checks everything a sync read from the store against `bounds` and turns it into a
 * {@link PeerReport}: finite numbers, counts ≥ 0 and at most {@link USAGE_FACTOR} × the limit
 * known (or {@link UNKNOWN_TOKENS} / {@link UNKNOWN_REQUESTS}), times no further ahead than the
 * skew and inside the window, at most {@link MAX_BUCKETS} buckets. A bad value is left out and
 * named in `problems`; the rest is kept. Limits in readings are dropped: a limit is never learned
 * from a peer. Models this instance does not serve are ignored. Pure: no I/O, no clock.
 *
 * @example
 * ```ts
 * const { report, problems } = checkPeers(readSyncReply(reply), bounds);
 * for (const [kind, example] of problems) logger.warn(`${PEER_PROBLEMS[kind]}: ${example}`);
 * ```
 */
export function checkPeers(raw: RawSyncReply, bounds: PeerBounds, usage = true): CheckedPeers {
  const problems = new Map<PeerProblem, string>();
  const flag = (kind: PeerProblem, example: string): void => {
    if (!problems.has(kind)) problems.set(kind, clip(example));
  };
  for (const s of raw.skipped) {
    flag(
      s.includes('-type') ? 'key-type' : s.endsWith('-fields') ? 'too-many-fields' : 'too-long',
      s,
    );
  }
  const models = new Map<string, Map<string, PeerModelReport>>();
  const entry = (m: { deployment: string; model: string }): PeerModelReport => {
    let byModel = models.get(m.deployment);
    if (byModel === undefined) models.set(m.deployment, (byModel = new Map()));
    let e = byModel.get(m.model);
    if (e === undefined) byModel.set(m.model, (e = {}));
    return e;
  };
  // A pool's usage and readings are every member's.
  const entries = (m: PeerModelBounds): PeerModelReport[] => (m.members ?? [m]).map(entry);

  if (usage) {
    const clean: PublishedUsage[] = [];
    for (const value of raw.usage) {
      const u = decodeUsage(value);
      if (u === undefined) {
        flag('usage-unreadable', value);
        continue;
      }
      if (!Number.isFinite(u.at) || u.at > bounds.now + bounds.skewMs) {
        flag('usage-time', value);
        continue;
      }
      const maxBucket = bounds.windowMs > 0 ? bounds.windowMs : NO_WINDOW;
      if (!(u.bucketMs === 0 || (u.bucketMs >= 1 && u.bucketMs <= maxBucket))) {
        flag('usage-bucket-size', value);
        continue;
      }
      const kept: Record<string, number[]> = {};
      for (const field of Object.keys(u.models)) {
        const m = bounds.models.get(field);
        if (m === undefined) continue;
        const flat = u.models[field];
        const problem = checkBuckets(flat, u.bucketMs, m, bounds);
        if (problem === undefined) kept[field] = flat!;
        else flag(problem, `${field} ${JSON.stringify(flat)}`);
      }
      clean.push({ at: u.at, bucketMs: u.bucketMs, models: kept });
      for (const field of Object.keys(u.readings ?? {})) {
        const m = bounds.models.get(field);
        if (m === undefined) continue;
        const flat = u.readings![field];
        const checked = checkReading(flat, m, bounds);
        if (checked === undefined) continue;
        if (typeof checked === 'string') {
          flag(checked, `${field} ${JSON.stringify(flat)}`);
          continue;
        }
        for (const e of entries(m)) {
          if (e.reading === undefined || checked.sentAt > e.reading.sentAt) e.reading = checked;
        }
      }
    }
    for (const [field, sum] of sumOthers(clean, bounds.now, bounds.windowMs)) {
      for (const e of entries(bounds.models.get(field)!)) e.usage = sum;
    }
  }

  for (const [field, value] of raw.cooling) {
    const m = bounds.models.get(field);
    if (m === undefined) continue;
    const until = /^\d{1,16}(\.\d{1,6})?$/.test(value) ? Number(value) : NaN;
    if (!Number.isFinite(until)) {
      flag('cooldown-unreadable', `${field} ${value}`);
      continue;
    }
    if (until <= bounds.now) continue;
    if (until > bounds.now + bounds.maxCooldown + bounds.skewMs)
      flag('cooldown-cap', `${field} ${value}`);
    entry(m).cooldownUntil = until;
  }

  const cooldownsRead = !raw.skipped.some((s) => s.startsWith('cooldowns-type'));
  return { report: { at: bounds.now, usage, cooldowns: cooldownsRead, models }, problems };
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;

/** Tokens or requests one instance may report for one model in a window, at `limit`. */
function ceiling(limit: number, unknown: number): number {
  return limit > 0 ? USAGE_FACTOR * limit : unknown;
}

/** The problem with one model's published buckets, if any. */
function checkBuckets(
  flat: unknown,
  bucketMs: number,
  m: PeerModelBounds,
  bounds: PeerBounds,
): PeerProblem | undefined {
  if (!Array.isArray(flat) || flat.length % 3 !== 0 || flat.length > 3 * MAX_BUCKETS) {
    return 'usage-count';
  }
  let tokens = 0;
  let requests = 0;
  for (let i = 0; i < flat.length; i += 3) {
    const [index, t, r] = [flat[i] as unknown, flat[i + 1] as unknown, flat[i + 2] as unknown];
    if (!isCount(index) || !Number.isInteger(index) || !isCount(t) || !isCount(r)) {
      return 'usage-count';
    }
    if (bucketMs > 0 && index * bucketMs > bounds.now + bounds.skewMs) return 'usage-future';
    tokens += t;
    requests += r;
  }
  if (
    tokens > ceiling(m.tokens, UNKNOWN_TOKENS) ||
    requests > ceiling(m.requests, UNKNOWN_REQUESTS)
  ) {
    return 'usage-bound';
  }
  return undefined;
}

/**
 * One model's reading, checked and without its limits, or what is wrong with it; `undefined`
 * when nothing is left once the limits are dropped.
 */
function checkReading(
  flat: unknown,
  m: PeerModelBounds,
  bounds: PeerBounds,
): SharedReading | PeerProblem | undefined {
  if (!Array.isArray(flat) || flat.length !== READING_LENGTH) return 'reading-unreadable';
  if (!flat.every((n) => typeof n === 'number' && Number.isFinite(n))) return 'reading-unreadable';
  const r = decodeReading(flat);
  if (r === undefined) return 'reading-unreadable';
  const window = bounds.windowMs > 0 ? bounds.windowMs : NO_WINDOW;
  const latest = bounds.now + bounds.skewMs;
  const inTime = (t: number) => t >= bounds.now - window - bounds.skewMs && t <= latest;
  const endInTime = (t: number) =>
    t === 0 || (t >= r.sentAt - window && t <= r.sentAt + window + bounds.skewMs);
  if (!inTime(r.sentAt) || !inTime(r.at) || r.at < r.sentAt - bounds.skewMs) return 'reading-time';
  if (!endInTime(r.tokensEnd) || !endInTime(r.requestsEnd)) return 'reading-time';
  // -1 says "not reported"; any other negative number is not a count.
  if ((flat as number[]).slice(5).some((n) => n < 0 && n !== -1)) return 'reading-count';
  if (!isCount(r.tokens) || r.tokens > ceiling(m.tokens, UNKNOWN_TOKENS)) return 'reading-count';
  const limits = {
    tokens: ceiling(m.tokens, UNKNOWN_TOKENS),
    requests: ceiling(m.requests, UNKNOWN_REQUESTS),
    input: ceiling(m.input || m.tokens, UNKNOWN_TOKENS),
    output: ceiling(m.output || m.tokens, UNKNOWN_TOKENS),
  };
  const reading: SharedReading['reading'] = {};
  for (const what of ['tokens', 'requests', 'input', 'output'] as const) {
    const remaining = r.reading[what]?.remaining;
    if (remaining === undefined) continue;
    if (remaining > limits[what]) return 'reading-count';
    // Only what is left: the limit is never learned from a peer.
    reading[what] = { remaining };
  }
  if (Object.keys(reading).length === 0) return undefined;
  return { ...r, reading };
}

/** A value as it may go into a log line: short, one line. */
function clip(value: string): string {
  const s = JSON.stringify(value.length > 120 ? `${value.slice(0, 120)}…` : value);
  return s.slice(1, -1);
}

import type { TokenUsage } from '../types';

/**
 * How an answer is kept: `json`, a whole answer's JSON text; `events`, a stream's events as
 * the SDK gave them (JSON text each); `sse`, a stream's events as the upstream's bytes (UTF-8
 * text each), which `sb.fetch` sends again as they came.
 */
export type EntryKind = 'json' | 'events' | 'sse';

/**
 * One kept answer: whose key it answers, where it was made (the deployment and its tags, which
 * a later call's required tags are checked against), until when it is served, its usage (for
 * the money a hit saves), and its content.
 *
 * @example
 * ```ts
 * const entry: CacheEntry = { v: 1, key, model: 'gpt-4o-mini', kind: 'json', deployment: 'east',
 *   tags: ['eu'], expires: Date.now() + 60_000, body: '{"id":"chatcmpl-1",...}' };
 * ```
 */
export interface CacheEntry {
  v: 1;
  key: string;
  model: string;
  kind: EntryKind;
  deployment: string;
  tags: string[];
  /** Epoch ms after which it is not served. */
  expires: number;
  usage?: TokenUsage;
  /** `json`: the answer's JSON text. */
  body?: string;
  /** `events`, `sse`: each event's text, in order. */
  events?: string[];
}

/** Longest entry written to, or read from, the shared store (characters of its JSON). */
export const MAX_SHARED_ENTRY = 1024 * 1024;
/** Most events of one stream entry. */
const MAX_EVENTS = 100_000;
/** Longest deployment name, tag count and tag taken from a shared entry. */
const MAX_NAME = 512;
const MAX_TAGS = 64;
const MAX_TAG = 64;
/** Clock skew between replicas allowed on an entry's expiry. */
const SKEW_MS = 5_000;
/** Most tokens one usage field may claim. */
const MAX_TOKENS = 1e9;

/**
 * The bytes an entry takes in memory (an estimate: two per character, plus its fields).
 *
 * @example
 * ```ts
 * entrySize(entry); // 2_340
 * ```
 */
export function entrySize(entry: CacheEntry): number {
  let chars = entry.key.length + entry.model.length + entry.deployment.length + 128;
  for (const tag of entry.tags) chars += tag.length + 8;
  if (entry.body !== undefined) chars += entry.body.length;
  if (entry.events !== undefined) for (const e of entry.events) chars += e.length + 16;
  return chars * 2;
}

/**
 * What a call expects of the entry read for it from the shared store.
 *
 * @example
 * ```ts
 * const expect: EntryExpectation = { key, model: 'gpt-4o-mini', kind: 'json', now: Date.now(), ttl: 60_000 };
 * ```
 */
interface EntryExpectation {
  key: string;
  model: string;
  kind: EntryKind;
  now: number;
  ttl: number;
}

/**
 * An entry read from the shared store, checked as every value read from there is: anyone who can
 * write under the prefix may have written it. Returns the entry, or why it is refused (a forged,
 * corrupt or foreign entry is a miss, never an answer). A `json` body and `events` must each be
 * a JSON object; `sse` events must be SSE text (lines of `data:`/`event:`/`id:` fields).
 *
 * @example
 * ```ts
 * const entry = readEntry(text, expect);
 * if (typeof entry === 'string') log(`skipped a cache entry: ${entry}`);
 * ```
 */
export function readEntry(text: string, expect: EntryExpectation): CacheEntry | string {
  if (text.length > MAX_SHARED_ENTRY) return `longer than ${MAX_SHARED_ENTRY} characters`;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return 'not an object';
  const e = raw as Record<string, unknown>;
  if (e.v !== 1) return 'of an unknown version';
  if (e.key !== expect.key) return 'written for another key';
  if (e.model !== expect.model) return 'of another model';
  if (e.kind !== expect.kind) return `of kind ${String(e.kind).slice(0, 16)}, not ${expect.kind}`;
  if (typeof e.deployment !== 'string' || e.deployment.length > MAX_NAME) {
    return 'without a deployment name';
  }
  if (!validTags(e.tags)) return 'with tags that are not a short list of short strings';
  const expires = e.expires;
  if (typeof expires !== 'number' || !Number.isFinite(expires)) return 'without an expiry';
  if (expires <= expect.now) return 'expired';
  if (expires > expect.now + expect.ttl + SKEW_MS) return 'expiring later than the ttl allows';
  const usage = e.usage === undefined ? undefined : readUsage(e.usage);
  if (usage === null) return 'with a usage that is not token counts';
  const entry: CacheEntry = {
    v: 1,
    key: expect.key,
    model: expect.model,
    kind: expect.kind,
    deployment: e.deployment,
    tags: e.tags as string[],
    expires,
  };
  if (usage !== undefined) entry.usage = usage;
  if (expect.kind === 'json') {
    if (typeof e.body !== 'string' || !isJsonObject(e.body)) return 'without a JSON answer';
    entry.body = e.body;
    return entry;
  }
  const events = e.events;
  if (!Array.isArray(events) || events.length === 0 || events.length > MAX_EVENTS) {
    return 'without a list of events';
  }
  for (let i = 0; i < events.length; i++) {
    const event: unknown = events[i];
    if (typeof event !== 'string') return 'with an event that is not text';
    // The upstream may close its stream without a blank line after the last event.
    const last = i === events.length - 1;
    if (expect.kind === 'events' ? !isJsonObject(event) : !isSseEvent(event, last)) {
      return `with an event that is not ${expect.kind === 'events' ? 'a JSON object' : 'SSE'}`;
    }
  }
  entry.events = events as string[];
  return entry;
}

function validTags(tags: unknown): boolean {
  return (
    Array.isArray(tags) &&
    tags.length <= MAX_TAGS &&
    tags.every((t) => typeof t === 'string' && t.length > 0 && t.length <= MAX_TAG)
  );
}

/** Token counts, or `null` when any is not a finite count within bounds. */
function readUsage(value: unknown): TokenUsage | null {
  if (typeof value !== 'object' || value === null) return null;
  const u = value as Record<string, unknown>;
  const count = (v: unknown) =>
    typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= MAX_TOKENS;
  if (!count(u.input) || !count(u.output)) return null;
  const out: TokenUsage = { input: u.input as number, output: u.output as number };
  for (const field of ['cacheRead', 'cacheWrite'] as const) {
    if (u[field] === undefined) continue;
    if (!count(u[field])) return null;
    out[field] = u[field] as number;
  }
  return out;
}

function isJsonObject(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

/**
 * One SSE event: field lines (`data:`, `event:`, `id:`, `retry:`, comments), ending blank (the
 * last of a stream may end without).
 */
function isSseEvent(text: string, last: boolean): boolean {
  if (!last && !text.endsWith('\n\n') && !text.endsWith('\r\n\r\n')) return false;
  for (const line of text.split(/\r?\n/)) {
    if (line === '' || line.startsWith(':')) continue;
    if (!/^(data|event|id|retry)(:|$)/.test(line)) return false;
  }
  return true;
}

import type { Deployment } from '../registry/deployment';
import { copyPlan } from './answer-copy';
import type { CacheEntry } from './cache-entry';
import type { CacheHit } from './cache-telemetry';

/**
 * What every hit of one entry reuses, made at its first hit: the answer parsed once (never
 * handed out) with the plan that copies it, the span's and counter's description of a hit, and
 * the USD it saves (the pricing does not change while the switchboard runs).
 *
 * @example
 * ```ts
 * const served = servedEntry(entry, { model, provider: 'openai', deployment: 'east', embeddings: false }, 0.0004);
 * const data = served.data(deployment); // a fresh copy of the recorded JSON
 * ```
 */
export interface ServedEntry {
  /**
   * A hit's data: a fresh copy of a `json` entry's answer, or the SDK's `Stream` (of
   * `deployment`'s provider) replaying fresh copies of an `events` entry's events in order;
   * `undefined` for `sse` entries, which `sb.fetch` answers from their bytes (`cachedReply`).
   */
  data(deployment: Deployment): unknown;
  readonly hit: CacheHit;
  readonly usd: number | undefined;
}

/**
 * The {@link ServedEntry} of `entry`. Throws (a `SyntaxError`) when its JSON does not parse,
 * which an entry from the recorder or checked by `readEntry` always does.
 *
 * @example
 * ```ts
 * held.served ??= servedEntry(held.entry, hit, usd);
 * ```
 */
export function servedEntry(
  entry: CacheEntry,
  hit: CacheHit,
  usd: number | undefined,
): ServedEntry {
  if (entry.kind === 'json') {
    const template: unknown = JSON.parse(entry.body!);
    const copy = copyPlan(template);
    return { data: () => copy(template), hit, usd };
  }
  if (entry.kind === 'sse') return { data: () => undefined, hit, usd };
  const templates = entry.events!.map((text) => JSON.parse(text) as unknown);
  const copies = templates.map((template) => copyPlan(template));
  async function* replay(): AsyncIterator<unknown> {
    for (let i = 0; i < templates.length; i++) yield copies[i]!(templates[i]);
  }
  return {
    data: (deployment) => deployment.makeStream(replay, new AbortController()),
    hit,
    usd,
  };
}

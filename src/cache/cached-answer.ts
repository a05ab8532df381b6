import type { Answer } from '../registry/deployment';
import type { CacheEntry } from './cache-entry';

const NO_OPTIONS: Record<string, never> = Object.freeze({}) as Record<string, never>;
const encoder = new TextEncoder();

/** The header every answer served from the cache carries. */
export const CACHE_HEADER = 'x-switchboard-cache';

/**
 * An answer served from the cache: its data made afresh from the entry (a parsed copy of the
 * JSON, or the SDK's `Stream` replaying the recorded events), and a `Response` built only when
 * asked for, with `x-switchboard-cache: hit`.
 *
 * @example
 * ```ts
 * const answer = new CachedAnswer(JSON.parse(entry.body!), entry);
 * answer.response.headers.get('x-switchboard-cache'); // 'hit'
 * ```
 */
export class CachedAnswer implements Answer {
  readonly options = NO_OPTIONS;
  private made: Response | undefined;

  constructor(
    readonly data: unknown,
    private readonly entry: CacheEntry,
  ) {}

  get response(): Response {
    return (this.made ??= this.reply());
  }

  /** The answer as the upstream sent it: the JSON text, or the recorded events as SSE. */
  reply(): Response {
    const entry = this.entry;
    if (entry.kind === 'json') {
      return new Response(entry.body, {
        status: 200,
        headers: { 'content-type': 'application/json', [CACHE_HEADER]: 'hit' },
      });
    }
    const events = entry.events!;
    // `sse` entries are the upstream's own bytes; `events` entries are written as `data:` lines.
    const frame =
      entry.kind === 'sse' ? (text: string) => text : (text: string) => `data: ${text}\n\n`;
    let next = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (next < events.length) controller.enqueue(encoder.encode(frame(events[next++]!)));
        else controller.close();
      },
    });
    return new Response(body, {
      status: 200,
      headers: { 'content-type': 'text/event-stream', [CACHE_HEADER]: 'hit' },
    });
  }
}

/**
 * What `sb.fetch` answers for a call the cache served: the recorded JSON text, or the recorded
 * SSE bytes exactly as the upstream sent them (`data: [DONE]` included); `undefined` for an
 * answer that did not come from the cache.
 *
 * @example
 * ```ts
 * const reply = cachedReply(answer);
 * if (reply !== undefined) return reply;
 * ```
 */
export function cachedReply(answer: Answer): Response | undefined {
  return answer instanceof CachedAnswer ? answer.reply() : undefined;
}

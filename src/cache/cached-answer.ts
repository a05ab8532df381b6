import type { Answer } from '../registry/deployment';
import type { CacheEntry } from './cache-entry';

const NO_OPTIONS: Record<string, never> = Object.freeze({}) as Record<string, never>;
const encoder = new TextEncoder();

/** The header every answer served from the cache carries. */
const CACHE_HEADER = 'x-switchboard-cache';

/**
 * An answer served from the cache: its data made afresh from the entry (a copy of the JSON, or
 * the SDK's `Stream` replaying the recorded events), and a `Response` built only when asked for,
 * with `x-switchboard-cache: hit`. `api` is the adapter's name (`chat.completions`, `responses`,
 * `messages`), which says how a stream's events are written as SSE.
 *
 * @example
 * ```ts
 * const answer = new CachedAnswer(JSON.parse(entry.body!), entry, 'chat.completions');
 * answer.response.headers.get('x-switchboard-cache'); // 'hit'
 * ```
 */
export class CachedAnswer implements Answer {
  readonly options = NO_OPTIONS;
  private made: Response | undefined;

  constructor(
    readonly data: unknown,
    private readonly entry: CacheEntry,
    private readonly api: string,
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
    // `sse` entries are the upstream's own bytes; `events` entries are written as the API does.
    const events = entry.kind === 'sse' ? entry.events! : sseOf(this.api, entry.events!);
    let next = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (next < events.length) controller.enqueue(encoder.encode(events[next++]!));
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
 * A stream's events (JSON text each) as its API writes them in SSE: Responses and Messages name
 * each event's `type` in an `event:` line before its `data:` line; Chat Completions chunks are
 * `data:` lines alone, and the stream ends with `data: [DONE]`.
 */
const EVENT_TYPE = /^[\w.-]{1,128}$/;

function sseOf(api: string, events: readonly string[]): string[] {
  if (api === 'chat.completions') {
    return [...events.map((text) => `data: ${text}\n\n`), 'data: [DONE]\n\n'];
  }
  return events.map((text) => {
    const type = (JSON.parse(text) as { type?: unknown }).type;
    // A type read from a shared entry is checked: it must not add lines of its own.
    return typeof type === 'string' && EVENT_TYPE.test(type)
      ? `event: ${type}\ndata: ${text}\n\n`
      : `data: ${text}\n\n`;
  });
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

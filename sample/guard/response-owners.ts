/** Ids longer than this are no response id an upstream made: not remembered. */
const MAX_ID_LENGTH = 256;

/** How far into a streamed answer its `response.created` event is looked for. */
const MAX_SCAN = 64 * 1024;

/**
 * Which key (its place in the gateway's list) created each stored response, so that only that key
 * may read it (`GET /v1/responses/:id`) or build on it (`previous_response_id`): another key gets
 * 404, as does any key for an id this gateway did not see created (another replica's, one
 * forgotten). Bounded: past `capacity` ids the oldest is forgotten.
 *
 * @example
 * ```ts
 * const owners = new ResponseOwners();
 * owners.claim('resp_1', 0);
 * owners.owns('resp_1', 1); // false
 * ```
 */
export class ResponseOwners {
  private readonly owners = new Map<string, number>();

  constructor(private readonly capacity = 10_000) {}

  /** `key` created the response `id`. */
  claim(id: string, key: number): void {
    if (id.length > MAX_ID_LENGTH) return;
    this.owners.delete(id);
    this.owners.set(id, key);
    if (this.owners.size > this.capacity) this.owners.delete(this.owners.keys().next().value!);
  }

  /** Whether `key` created the response `id`. */
  owns(id: string, key: number): boolean {
    return this.owners.get(id) === key;
  }

  /** How many ids are remembered. */
  get size(): number {
    return this.owners.size;
  }
}

/**
 * Reads the id of the response a `POST /v1/responses` created from its answer as the gateway
 * writes it: the whole JSON, or the stream's chunks until its `response.created` event.
 *
 * @example
 * ```ts
 * const watch = createdResponseId((id) => owners.claim(id, key));
 * watch.whole(Buffer.from('{"id":"resp_1","object":"response"}'));
 * ```
 */
export function createdResponseId(found: (id: string) => void): {
  whole(body: Uint8Array): void;
  /** One chunk of the SSE answer; false once nothing more is needed. */
  chunk(chunk: Uint8Array): boolean;
} {
  const decoder = new TextDecoder();
  let text = '';
  let done = false;
  const take = (id: unknown) => {
    done = true;
    if (typeof id === 'string' && id !== '') found(id);
  };
  return {
    whole(body) {
      try {
        take((JSON.parse(decoder.decode(body)) as { id?: unknown }).id);
      } catch {
        done = true;
      }
    },
    chunk(chunk) {
      if (done) return false;
      text += decoder.decode(chunk, { stream: true });
      for (let end = text.indexOf('\n\n'); end >= 0 && !done; end = text.indexOf('\n\n')) {
        const event = text.slice(0, end);
        text = text.slice(end + 2);
        const data = event
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).trimStart())
          .join('\n');
        try {
          const parsed = JSON.parse(data) as { type?: unknown; response?: { id?: unknown } };
          if (parsed.type === 'response.created') take(parsed.response?.id);
        } catch {
          // Not JSON (a comment, `[DONE]`): not the event looked for.
        }
      }
      if (text.length > MAX_SCAN) done = true;
      return !done;
    },
  };
}

/**
 * What a `POST /v1/responses` body builds on, read from the parsed body (never from its bytes:
 * JSON may spell a field `"previous\u005fresponse_id"`, which the upstream reads as the same):
 * `previous_response_id`, and the `conversation` it continues (an id, or `{ id }`). Each is a
 * stored object some key made.
 *
 * @example
 * ```ts
 * storedReferences({ previous_response_id: 'resp_1', conversation: { id: 'conv_1' } });
 * // [{ param: 'previous_response_id', id: 'resp_1' }, { param: 'conversation', id: 'conv_1' }]
 * ```
 */
export function storedReferences(body: unknown): { param: string; id: unknown }[] {
  if (typeof body !== 'object' || body === null) return [];
  const fields = body as { previous_response_id?: unknown; conversation?: unknown };
  const out: { param: string; id: unknown }[] = [];
  const previous = fields.previous_response_id;
  if (previous !== undefined && previous !== null) {
    out.push({ param: 'previous_response_id', id: previous });
  }
  const conversation = fields.conversation;
  if (conversation !== undefined && conversation !== null) {
    const id =
      typeof conversation === 'object' ? (conversation as { id?: unknown }).id : conversation;
    out.push({ param: 'conversation', id });
  }
  return out;
}

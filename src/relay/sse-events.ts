/**
 * An upstream's server-sent events, read as they arrive: each event is parsed for the
 * switchboard's accounting, and its bytes are kept, exactly as the upstream sent them, for the
 * relay to pass on.
 */

const decoder = new TextDecoder();

/** The bytes of each event handed out, by the parsed event. */
const eventBytes = new WeakMap<object, Uint8Array>();

/** The upstream's response, by the controller of the stream read from it. */
const streamResponses = new WeakMap<AbortController, Response>();

/**
 * The bytes an event of an {@link SseEvents} came in, blank line included.
 *
 * @example
 * ```ts
 * for await (const event of events) out.enqueue(bytesOf(event)!);
 * ```
 */
export function bytesOf(event: unknown): Uint8Array | undefined {
  return typeof event === 'object' && event !== null ? eventBytes.get(event) : undefined;
}

/**
 * The upstream response a stream is read from, by the stream's controller (the SDK's `Stream`
 * keeps it as `controller`).
 *
 * @example
 * ```ts
 * const upstream = responseOfStream((answer.data as { controller: AbortController }).controller);
 * ```
 */
export function responseOfStream(controller: AbortController | undefined): Response | undefined {
  return controller === undefined ? undefined : streamResponses.get(controller);
}

/**
 * The events of an SSE response: each is the JSON of its `data:` field, or an empty object for
 * an event without JSON (`[DONE]`, a comment); either way {@link bytesOf} gives its bytes.
 * Aborting {@link controller} cancels the upstream's body.
 *
 * @example
 * ```ts
 * const events = new SseEvents(response);
 * for await (const event of events) console.log(event);
 * ```
 */
export class SseEvents implements AsyncIterable<unknown> {
  readonly controller = new AbortController();

  constructor(readonly response: Response) {
    streamResponses.set(this.controller, response);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<unknown> {
    const body = this.response.body;
    if (body === null) return;
    const reader = body.getReader();
    const signal = this.controller.signal;
    const cancel = (): void => void reader.cancel().catch(() => undefined);
    signal.addEventListener('abort', cancel, { once: true });
    let finished = false;
    try {
      let pending: Uint8Array | undefined;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const buf = pending === undefined ? value : concat(pending, value);
        let start = 0;
        for (let end = eventEnd(buf, start); end > 0; end = eventEnd(buf, start)) {
          yield parse(buf.subarray(start, end));
          start = end;
        }
        pending = start < buf.length ? buf.subarray(start) : undefined;
      }
      finished = true;
      if (pending !== undefined && pending.length > 0) yield parse(pending);
    } finally {
      signal.removeEventListener('abort', cancel);
      if (!finished) cancel();
    }
  }
}

/** The index just after the blank line that ends the event starting at `start`, or -1. */
function eventEnd(buf: Uint8Array, start: number): number {
  for (let i = buf.indexOf(10, start); i >= 0 && i < buf.length - 1; i = buf.indexOf(10, i + 1)) {
    const next = buf[i + 1];
    if (next === 10) return i + 2;
    if (next === 13 && buf[i + 2] === 10) return i + 3;
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** One event's JSON (or an empty object), remembered with its bytes. */
function parse(bytes: Uint8Array): object {
  const text = decoder.decode(bytes);
  let data: string | undefined;
  let at = 0;
  while (at < text.length) {
    let eol = text.indexOf('\n', at);
    if (eol < 0) eol = text.length;
    if (text.startsWith('data:', at)) {
      const from = text.charCodeAt(at + 5) === 32 ? at + 6 : at + 5;
      const line = text.slice(from, text.charCodeAt(eol - 1) === 13 ? eol - 1 : eol);
      data = data === undefined ? line : `${data}\n${line}`;
    }
    at = eol + 1;
  }
  let event: object = {};
  if (data !== undefined && data !== '[DONE]') {
    try {
      const parsed: unknown = JSON.parse(data);
      if (typeof parsed === 'object' && parsed !== null) event = parsed;
    } catch {
      // Not JSON: passed on as it came, for the client to judge.
    }
  }
  eventBytes.set(event, bytes);
  return event;
}

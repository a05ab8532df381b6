/** What the relay reads of a `fetch` call's arguments, whatever form they take. */

const decoder = new TextDecoder();

/**
 * A `fetch` call's arguments as the relay reads them: method, path (no host, no query), headers,
 * body and signal; `init` wins over a `Request`'s own, as in `fetch`.
 */
export interface RequestParts {
  method: string;
  path: string;
  headers: HeadersInit | undefined;
  body: BodyInit | null | undefined;
  signal: AbortSignal | null | undefined;
  /** A `Request` whose body is read when `init` gives none. */
  request: Request | undefined;
}

/**
 * Reads `fetch(input, init)`'s arguments without building a `URL` for the common case (a string
 * and an init object, as every client library passes them).
 *
 * @example
 * ```ts
 * requestParts('https://ignored.example/v1/chat/completions?x=1', { method: 'POST' }).path; // '/v1/chat/completions'
 * ```
 */
export function requestParts(
  input: RequestInfo | URL,
  init: RequestInit | undefined,
): RequestParts {
  if (typeof input === 'string') {
    return {
      method: (init?.method ?? 'GET').toUpperCase(),
      path: pathOf(input),
      headers: init?.headers,
      body: init?.body,
      signal: init?.signal,
      request: undefined,
    };
  }
  if (input instanceof URL) {
    return {
      method: (init?.method ?? 'GET').toUpperCase(),
      path: input.pathname,
      headers: init?.headers,
      body: init?.body,
      signal: init?.signal,
      request: undefined,
    };
  }
  return {
    method: (init?.method ?? input.method).toUpperCase(),
    path: pathOf(input.url),
    headers: init?.headers ?? input.headers,
    body: init?.body,
    signal: init?.signal ?? input.signal,
    request: init?.body === undefined ? input : undefined,
  };
}

/** The path of a URL string (absolute or not), without query or fragment. */
function pathOf(url: string): string {
  const scheme = url.indexOf('://');
  let start = 0;
  if (scheme >= 0) {
    start = url.indexOf('/', scheme + 3);
    if (start < 0) return '/';
  }
  let end = url.length;
  const query = url.indexOf('?', start);
  if (query >= 0) end = query;
  const hash = url.indexOf('#', start);
  if (hash >= 0 && hash < end) end = hash;
  return url.slice(start, end);
}

/**
 * One header of any `HeadersInit` (a `Headers`, a record, or pairs), case-insensitively.
 *
 * @example
 * ```ts
 * headerOf({ 'X-Session-Id': 'user-42' }, 'x-session-id'); // 'user-42'
 * ```
 */
export function headerOf(headers: HeadersInit | undefined, name: string): string | undefined {
  if (headers === undefined) return undefined;
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  if (Array.isArray(headers)) {
    for (const [key, value] of headers) if (key.toLowerCase() === name) return value;
    return undefined;
  }
  const record = headers as Record<string, string | undefined>;
  const exact = record[name];
  if (exact !== undefined) return exact;
  // Node's own headers are lower-case already: the exact lookup answers, or nothing will.
  for (const key in record) {
    if (key.length === name.length && key.toLowerCase() === name) return record[key];
  }
  return undefined;
}

/** A request body as sent (kept for the upstream) and as text (to parse). */
interface BodyText {
  raw: string | Uint8Array;
  text: string;
}

/**
 * The body of a `fetch` call: a string or bytes as they are, anything else (a stream, a `Blob`,
 * a `Request`'s body) read whole.
 *
 * @example
 * ```ts
 * const { text } = await bodyText(parts);
 * ```
 */
export async function bodyText(parts: RequestParts): Promise<BodyText | undefined> {
  const body = parts.body;
  if (typeof body === 'string') return { raw: body, text: body };
  if (body instanceof Uint8Array) return { raw: body, text: decoder.decode(body) };
  if (ArrayBuffer.isView(body)) {
    const bytes = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
    return { raw: bytes, text: decoder.decode(bytes) };
  }
  if (body instanceof ArrayBuffer) {
    const bytes = new Uint8Array(body);
    return { raw: bytes, text: decoder.decode(bytes) };
  }
  if (body === undefined || body === null) {
    if (parts.request === undefined || parts.request.body === null) return undefined;
    const text = await parts.request.text();
    return { raw: text, text };
  }
  const text = await new Response(body).text();
  return { raw: text, text };
}

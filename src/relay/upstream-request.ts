import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import OpenAI from 'openai';

/**
 * A relayed request sent over Node's own HTTP client instead of the SDK's `fetch`: the SDK client
 * still builds the request (URL, key or token, its headers, the upstream's model name) through
 * its own hooks, but the bytes go out on a keep-alive socket and the answer comes back as a
 * Node stream, read once. The SDK's `fetch` (undici's `Request`, `Response` and web streams) and
 * its logging cost more CPU per relayed request than everything else the relay does.
 *
 * Only clients whose request building is known to end in a plain `fetch` take this path: the
 * `openai` client without a `fetch` of its own. The Anthropic clients have middleware and token refreshes around their
 * `fetch`; their requests go through the SDK.
 */

/** The hooks of an SDK client that build a request (protected in its types, public at run time). */
interface RequestBuilder {
  prepareOptions(options: object): Promise<unknown>;
  buildRequest(
    options: object,
    extra: { retryCount: number },
  ): Promise<{ req: { method: string; headers: Headers; body?: unknown }; url: string }>;
  prepareRequest(req: object, context: { url: string; options: object }): Promise<void>;
  makeStatusError(status: number, error: unknown, message: unknown, headers: Headers): Error;
}

/** One request as the relay hands it over. */
export interface UpstreamRequest {
  method: 'post' | 'get';
  path: string;
  /** The body as parsed: the client's hooks may put the upstream's model name in a copy. */
  parsed?: Record<string, unknown>;
  /** The bytes to send when the hooks left {@link parsed} as it was. */
  payload?: string | Uint8Array;
  headers: Readonly<Record<string, string>>;
  signal?: AbortSignal | null;
  timeout?: number;
}

/** The upstream's answer: its head, and its body as Node's stream. */
export interface UpstreamAnswer {
  status: number;
  headers: Headers;
  body: IncomingMessage;
}

const httpAgent = new HttpAgent({ keepAlive: true });
const httpsAgent = new HttpsAgent({ keepAlive: true });

/**
 * Whether requests of `client` go over {@link sendUpstream}.
 *
 * @example
 * ```ts
 * if (sendsDirectly(deployment.client)) await sendUpstream(deployment.client, request);
 * ```
 */
export function sendsDirectly(client: unknown): boolean {
  // A client given a `fetch` of its own (a simulation's) is sent through it, as it asked.
  return (
    client instanceof OpenAI &&
    (client as unknown as { _options: { fetch?: unknown } })._options.fetch === undefined
  );
}

/**
 * Sends one request as the SDK client would, and resolves with the answer's head once it comes
 * (2xx); any other status rejects with the SDK's own error for it, as the SDK would throw it.
 * Connection failures reject with the SDK's `APIConnectionError` (its `cause` Node's error,
 * with the socket's `bytesRead`, so a reused socket the server had closed is recognised), a
 * timeout with `APIConnectionTimeoutError`, the caller's abort with `APIUserAbortError`.
 *
 * @example
 * ```ts
 * const { status, headers, body } = await sendUpstream(client, { method: 'post', path: '/chat/completions', parsed, payload, headers: {} });
 * ```
 */
export async function sendUpstream(
  client: unknown,
  request: UpstreamRequest,
): Promise<UpstreamAnswer> {
  const builder = client as RequestBuilder;
  const options: Record<string, unknown> = {
    method: request.method,
    path: request.path,
    body: request.parsed,
    headers: request.headers,
    maxRetries: 0,
  };
  if (request.timeout !== undefined) options.timeout = request.timeout;
  await builder.prepareOptions(options);
  if (request.parsed !== undefined) {
    // Untouched by the hooks: the client's own bytes; else what the hooks made of it.
    options.body =
      options.body === request.parsed && request.payload !== undefined
        ? request.payload
        : JSON.stringify(options.body);
  }
  const { req, url } = await builder.buildRequest(options, { retryCount: 0 });
  await builder.prepareRequest(req, { url, options });
  const signal = request.signal ?? undefined;
  if (signal?.aborted) throw new OpenAI.APIUserAbortError();
  return new Promise<UpstreamAnswer>((resolve, reject) => {
    const target = new URL(url);
    const https = target.protocol === 'https:';
    const headers: Record<string, string> = {};
    req.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const body = req.body as string | Uint8Array | undefined;
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const out = (https ? httpsRequest : httpRequest)({
      protocol: target.protocol,
      // An IPv6 literal without its brackets, as Node's resolver takes it.
      hostname: target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname,
      port: target.port,
      path: target.pathname + target.search,
      method: req.method.toUpperCase(),
      headers,
      agent: https ? httpsAgent : httpAgent,
    });
    let settled = false;
    const timeout = (options.timeout as number | undefined) ?? (client as OpenAI).timeout;
    const timer = setTimeout(() => fail(new OpenAI.APIConnectionTimeoutError()), timeout);
    const onAbort = () => fail(new OpenAI.APIUserAbortError());
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    function fail(error: Error): void {
      if (settled) return;
      done();
      out.destroy();
      reject(error);
    }
    out.on('error', (error: Error & { socket?: unknown }) => {
      if (settled) return;
      // What tells a reused socket from a fresh one (see isStaleSocket).
      error.socket = { bytesRead: out.reusedSocket ? Math.max(1, bytesRead(out)) : 0 };
      fail(new OpenAI.APIConnectionError({ cause: error }));
    });
    out.on('response', (res) => {
      if (settled) {
        res.resume();
        return;
      }
      const status = res.statusCode ?? 0;
      const answerHeaders = headersOf(res);
      if (status >= 200 && status < 300) {
        done();
        // The caller's abort from here on ends the body, which its reader sees.
        if (signal) {
          const cut = () => res.destroy(new OpenAI.APIUserAbortError());
          signal.addEventListener('abort', cut, { once: true });
          res.once('close', () => signal.removeEventListener('abort', cut));
        }
        resolve({ status, headers: answerHeaders, body: res });
        return;
      }
      readText(res).then(
        (text) => {
          if (settled) return;
          done();
          const json = safeJson(text);
          reject(
            builder.makeStatusError(
              status,
              json,
              json === undefined ? text : undefined,
              answerHeaders,
            ),
          );
        },
        (error: Error) => fail(new OpenAI.APIConnectionError({ cause: error })),
      );
    });
    out.end(body);
  });
}

/**
 * A body read whole, as text.
 *
 * @example
 * ```ts
 * const text = await readText(answer.body);
 * ```
 */
export function readText(body: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    body.on('data', (chunk: Buffer) => chunks.push(chunk));
    body.once('end', () =>
      resolve(
        chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8'),
      ),
    );
    body.once('error', reject);
    // A body cut short (the upstream's socket closed) ends with an error too.
    body.once('aborted', () => reject(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })));
  });
}

/**
 * The answer as a web `Response` (an SSE stream read by the relay as it comes).
 *
 * @example
 * ```ts
 * const response = webResponse(answer);
 * ```
 */
export function webResponse(answer: UpstreamAnswer, withBody: boolean): Response {
  const body = withBody ? (Readable.toWeb(answer.body) as ReadableStream<Uint8Array>) : null;
  return new Response(body, { status: answer.status, headers: answer.headers });
}

function headersOf(res: IncomingMessage): Headers {
  const headers = new Headers();
  const raw = res.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  return headers;
}

function bytesRead(out: { socket?: { bytesRead?: number } | null }): number {
  return out.socket?.bytesRead ?? 0;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

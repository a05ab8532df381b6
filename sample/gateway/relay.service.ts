import type { IncomingMessage, ServerResponse } from 'node:http';
import { Injectable } from '@nestjs/common';
import type { Counter } from '@opentelemetry/api';
import { Switchboard } from 'nestjs-switchboard';
import {
  clip,
  readRequestBody,
  REQUEST_BODY,
  scrub,
  type RelayRequestInit,
  type RequestBody,
} from 'nestjs-switchboard/extend';
import { MetricService } from 'nestjs-otel';
import { gatewayKeyOf } from '../guard/gateway.guard';
import { createdResponseId, ResponseOwners, storedReferences } from '../guard/response-owners';
import { pathOf } from './body-routes';
import { apiOf, wireForPath, type Problem } from './wire';

const STORED = '/v1/responses';

/**
 * A request as the gateway's body parser leaves it (`/v1` bodies as the client's bytes): Node's
 * own under express, Fastify's (the same fields) under fastify.
 */
export type GatewayRequest = Pick<IncomingMessage, 'url' | 'method' | 'headers'> & {
  body?: unknown;
};

/** Node's response under express; Fastify's reply, which hands over its `raw` one, under fastify. */
export type GatewayResponse = ServerResponse | { raw: ServerResponse; hijack(): unknown };

/**
 * Hands each API request to the switchboard's `fetch` and writes its `Response` back: JSON
 * whole, SSE event by event as it comes (a client that leaves stops the upstream's stream).
 * With keys, a stored response is its key's: another key that names it gets 404.
 */
@Injectable()
export class RelayService {
  private readonly answered: Counter;

  constructor(
    private readonly sb: Switchboard,
    metrics: MetricService,
    private readonly owners: ResponseOwners,
  ) {
    this.answered = metrics.getCounter('gateway_requests', {
      description: 'Requests the gateway answered, by API and HTTP status',
    });
  }

  async relay(req: GatewayRequest, reply: GatewayResponse): Promise<void> {
    let res: ServerResponse;
    if ('raw' in reply) {
      // Fastify: the answer is written here, not by the framework.
      reply.hijack();
      res = reply.raw;
    } else res = reply;
    const url = req.url ?? '/';
    const key = gatewayKeyOf(req);
    // The body is parsed once, here: ownership reads it, and the switchboard takes it as read.
    const read =
      req.method === 'POST' && Buffer.isBuffer(req.body) ? readRequestBody(req.body) : undefined;
    const foreign = key === undefined ? undefined : this.foreignResponse(req, key, read);
    if (foreign !== undefined) {
      sendJson(res, foreign.status, wireForPath(STORED).errorBody(foreign));
      this.answered.add(1, { api: apiOf(url), status: String(foreign.status) });
      return;
    }
    // The client went away: stop the call too (a queued call leaves the queue).
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    let response: Response;
    try {
      const init: RelayRequestInit = {
        method: req.method,
        headers: req.headers as Record<string, string>,
        signal: abort.signal,
        [REQUEST_BODY]: read,
      };
      response = await this.sb.fetch(url, init);
    } catch (error) {
      if (abort.signal.aborted) return;
      response = Response.json(
        { error: { message: scrub((error as Error)?.message ?? error), type: 'server_error' } },
        { status: 500 },
      );
    }
    const created =
      key !== undefined && req.method === 'POST' && pathOf(url) === STORED && response.ok
        ? createdResponseId((id) => this.owners.claim(id, key))
        : undefined;
    await send(response, res, created);
    this.answered.add(1, { api: apiOf(url), status: String(res.statusCode) });
  }

  /**
   * The 404 for a request of key `key` that names a stored response another key made (or one
   * this gateway did not see made): to read it, or to build on it. The same answer either way,
   * so that it tells nothing of whether the id exists.
   */
  private foreignResponse(
    req: GatewayRequest,
    key: number,
    read: RequestBody | undefined,
  ): Problem | undefined {
    const path = pathOf(req.url);
    let refs: { param: string; id: unknown }[];
    if (req.method === 'GET' && path.startsWith(`${STORED}/`)) {
      refs = [{ param: 'response_id', id: decoded(path.slice(STORED.length + 1)) }];
    } else if (req.method === 'POST' && path === STORED && read?.params !== undefined) {
      // Read as the upstream reads it: the parsed body, whatever escapes spell its fields (a body
      // that could not be read is refused by the relay).
      refs = storedReferences(read.params);
    } else return undefined;
    for (const { param, id } of refs) {
      if (typeof id !== 'string' || this.owners.owns(id, key)) continue;
      return {
        status: 404,
        message: `No ${param === 'conversation' ? 'conversation' : 'response'} ${clip(id)} was created with this key.`,
        param,
        code: 'not_found',
      };
    }
    return undefined;
  }
}

function decoded(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** What {@link send} shows of the answer to whoever reads the id of a created response. */
type AnswerWatch = ReturnType<typeof createdResponseId>;

/**
 * The upstream's response headers a gateway client gets: what the APIs' clients read (the body's
 * type, the request id they report, when to retry) and the switchboard's own `x-switchboard-*`.
 * Nothing else: not `set-cookie`, not `openai-organization`, not one deployment's
 * `x-ratelimit-*` (a client of the gateway is not that deployment's client).
 */
export const ANSWER_HEADERS: ReadonlySet<string> = new Set([
  'content-type',
  'retry-after',
  'retry-after-ms',
  'x-request-id',
  'request-id',
  'openai-processing-ms',
]);

/**
 * The headers of `response` a gateway client may see (see {@link ANSWER_HEADERS}).
 *
 * @example
 * ```ts
 * answerHeaders(new Response('', { headers: { 'set-cookie': 'a=1', 'x-request-id': 'r' } }));
 * // { 'x-request-id': 'r' }
 * ```
 */
export function answerHeaders(response: Response): Record<string, string> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (ANSWER_HEADERS.has(name) || name.startsWith('x-switchboard-')) headers[name] = value;
  });
  return headers;
}

/** Writes a `Response`: whole when it is JSON, chunk by chunk (with backpressure) when SSE. */
async function send(response: Response, res: ServerResponse, watch?: AnswerWatch): Promise<void> {
  const headers = answerHeaders(response);
  const type = headers['content-type'];
  if (response.body === null || !type?.startsWith('text/event-stream')) {
    const body = Buffer.from(await response.arrayBuffer());
    watch?.whole(body);
    headers['content-length'] = String(body.length);
    res.writeHead(response.status, headers);
    res.end(body);
    return;
  }
  headers['cache-control'] = 'no-cache';
  headers['x-accel-buffering'] = 'no';
  res.writeHead(response.status, headers);
  res.flushHeaders();
  const reader = response.body.getReader();
  const gone = () => void reader.cancel().catch(() => undefined);
  res.once('close', gone);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (watch !== undefined && !watch.chunk(value)) watch = undefined;
      if (!(await write(res, value))) return;
    }
    res.end();
  } catch {
    res.destroy();
  } finally {
    res.off('close', gone);
  }
}

/** Writes one chunk, waiting for the socket to drain; false once the client is gone. */
function write(res: ServerResponse, chunk: Uint8Array): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(false);
  if (res.write(chunk)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}

/**
 * Writes a complete JSON answer (errors raised before a route runs).
 *
 * @example
 * ```ts
 * sendJson(res, 400, { error: { message: 'bad' } });
 * ```
 */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: object,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
  });
  res.end(payload);
}

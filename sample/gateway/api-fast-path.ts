import type { IncomingMessage, ServerResponse } from 'node:http';
import { Logger, type INestApplication } from '@nestjs/common';
import { scrub, STACK_LIMIT } from 'nestjs-switchboard/extend';
import { API_POSTS, pathOf } from './body-routes';
import { RelayService, sendJson, type GatewayRequest } from './relay.service';
import { wireForPath } from './wire';

/** The GET routes of the API controllers (their POST routes are {@link API_POSTS}). */
const GETS = /^\/v1\/(?:models|models\/[^/]+|responses\/[^/]+)$/;

const logger = new Logger('Gateway');

/**
 * A request handler, shaped as express middleware, that hands the API controllers' requests
 * straight to the relay: the same relay and answers as the controllers', without the work
 * express's router, its body parser and Nest's route (guards, interceptors and pipes looked up
 * and run) do on every request. It runs after the gateway's door (`guard/door.ts`), which has let
 * the request in on its headers. Whatever it does not take (a path in another form, a body it
 * does not read, any other route) goes on to express and Nest as it came.
 *
 * It runs before express: it reads the bodies it takes itself (a declared length within `limit`,
 * not compressed) and leaves every other body to the body parsers.
 *
 * @example
 * ```ts
 * const fast = apiFastPath(app, 20 * 1024 * 1024);
 * server.on('request', (req, res) => fast(req, res, () => expressApp(req, res)));
 * ```
 */
export function apiFastPath(
  app: INestApplication,
  limit: number,
): (req: IncomingMessage & GatewayRequest, res: ServerResponse, next: () => void) => void {
  const relay = app.get(RelayService);
  return (req, res, next) => {
    const path = pathOf(req.url);
    const served =
      req.method === 'POST' ? API_POSTS.has(path) : req.method === 'GET' && GETS.test(path);
    if (!served) return next();
    // A body of a known length within the limit, as it came: read here. Any other (chunked,
    // compressed, too large) is the body parser's, on Nest's route.
    const length = req.method === 'POST' ? contentLength(req, limit) : 0;
    if (length === undefined) return next();
    if (length === 0) {
      // As the body parser leaves an empty body: no bytes, for the relay to refuse as not JSON.
      if (req.method === 'POST') req.body = Buffer.alloc(0);
      return answer(req, res, path);
    }
    const body = Buffer.allocUnsafe(length);
    let at = 0;
    req.on('data', (chunk: Buffer) => {
      if (at + chunk.length > length) {
        req.destroy();
        return;
      }
      chunk.copy(body, at);
      at += chunk.length;
    });
    req.once('end', () => {
      if (at !== length) return void res.destroy();
      req.body = body;
      answer(req, res, path);
    });
  };

  function answer(req: GatewayRequest, res: ServerResponse, path: string): void {
    relay.relay(req, res).catch((error: unknown) => {
      logger.error(
        scrub(error instanceof Error ? (error.stack ?? error.message) : error, STACK_LIMIT),
      );
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const message = 'The gateway failed to handle the request.';
      sendJson(res, 500, wireForPath(path).errorBody({ status: 500, message }));
    });
  }
}

/** The body's length when the fast path may read it: declared, uncompressed, within `limit`. */
function contentLength(req: IncomingMessage, limit: number): number | undefined {
  const declared = req.headers['content-length'];
  const encoding = req.headers['content-encoding'];
  if (declared === undefined || (encoding !== undefined && encoding !== 'identity')) {
    return undefined;
  }
  const length = Number(declared);
  return Number.isSafeInteger(length) && length >= 0 && length <= limit ? length : undefined;
}

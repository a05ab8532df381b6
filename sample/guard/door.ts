import type { IncomingMessage, ServerResponse } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { bodyRouteOf, carriesBody, declaredLength, pathOf } from '../gateway/body-routes';
import { problemOf } from '../gateway/provider-error.filter';
import { sendJson } from '../gateway/relay.service';
import { wireForPath } from '../gateway/wire';
import { GatewayKeys } from './gateway-keys';
import { GatewayGuard } from './gateway.guard';
import { GatewayRefusal } from './gateway-refusal';
import { KeyLimits } from './key-limits';

/** Bytes of an unread body discarded after the answer before the connection is cut. */
export const DISCARD_LIMIT = 1024 * 1024;

/**
 * The gateway's first step for every request, before the platform (express or fastify) sees it:
 * the {@link GatewayGuard}'s checks on the headers alone (host, key, per-key limits), and the
 * body's declared length against what its route takes, so that no body is read, buffered or
 * parsed before the request is let in, and none is read for a route that takes none.
 *
 * A refusal is answered here, in the API's shape, without reading the body. What follows the
 * answer of a body nobody reads (a refusal's, or one sent to a route that takes none: any GET, a
 * path that is no route) is discarded up to {@link DISCARD_LIMIT} bytes, so that a small request
 * sent without its key gets its 401 on a connection it can use again; past that the connection
 * is cut. Closing at once instead would reset a connection the client is still writing to, and
 * its client could see the reset before the answer.
 *
 * @example
 * ```ts
 * const door = gatewayDoor(app);
 * server.on('request', (req, res) => door(req, res, () => platform(req, res)));
 * ```
 */
export function gatewayDoor(
  app: INestApplication,
): (req: IncomingMessage, res: ServerResponse, next: () => void) => void {
  const guard = new GatewayGuard(
    app.get(GatewayKeys, { strict: false }),
    app.get(KeyLimits, { strict: false }),
  );
  return (req, res, next) => {
    const path = pathOf(req.url);
    const route = bodyRouteOf(req.method, path);
    const body = carriesBody(req);
    try {
      guard.check(req, res);
      if (body && (declaredLength(req) ?? 0) > (route?.limit ?? Infinity)) {
        throw new GatewayRefusal(413, `The request body is larger than ${route!.limit} bytes.`);
      }
    } catch (error) {
      if (!(error instanceof GatewayRefusal)) throw error;
      refuse(res, path, error);
      if (body) discardUnread(req, res);
      return;
    }
    if (body && route === undefined) discardUnread(req, res);
    next();
  };
}

function refuse(res: ServerResponse, path: string, refusal: GatewayRefusal): void {
  const payload = path.startsWith('/v1/')
    ? wireForPath(path).errorBody(problemOf(refusal))
    : (refusal.getResponse() as object);
  sendJson(res, refusal.getStatus(), payload, { ...refusal.headers });
}

/**
 * Once the answer is written, Node discards the rest of a body nobody read (so that the
 * connection can take the next request): it may, up to {@link DISCARD_LIMIT} bytes.
 */
function discardUnread(req: IncomingMessage, res: ServerResponse): void {
  res.once('finish', () => {
    let discarded = 0;
    req.on('data', (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > DISCARD_LIMIT) req.socket.destroy();
    });
  });
}

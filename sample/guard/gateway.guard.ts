import type { ServerResponse } from 'node:http';
import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { retryHeaders } from 'nestjs-switchboard/extend';
import { pathOf } from '../gateway/body-routes';
import { PAGE_PATHS } from '../status/status.controller';
import { GatewayKeys, presentedKey } from './gateway-keys';
import { GatewayRefusal } from './gateway-refusal';
import { isLoopbackHost } from './host-check';
import { KeyLimits } from './key-limits';

/** The longest mark-down the status page's endpoint takes: one day, in ms. */
export const MAX_MARK_DOWN_MS = 86_400_000;

/**
 * What anyone may fetch without a key: the probes (a kubelet sends none) and the status page's own
 * files. Exact paths, case included, as the routes match them.
 */
const OPEN: ReadonlySet<string> = new Set([
  '/health',
  '/health/ready',
  '/health/live',
  ...PAGE_PATHS,
]);

/** The header that names a call's tenant (the relay reads it). */
const TENANT_HEADER = 'x-switchboard-tenant';

const MARK_DOWN = /^\/switchboard\/deployments\/[^/]+\/mark-down$/;

/** Requests {@link GatewayGuard.check} let pass (Node's own request, under either platform). */
const admitted = new WeakSet<object>();

/** The key (its place in the list) each request let in with a key presented. */
const keyOfRequest = new WeakMap<object, number>();

/**
 * The key (its place in the gateway's list) a request was let in with, under either platform;
 * undefined without keys.
 *
 * @example
 * ```ts
 * const key = gatewayKeyOf(req); // 0 for the first key of GATEWAY_API_KEYS
 * ```
 */
export function gatewayKeyOf(req: object): number | undefined {
  return keyOfRequest.get((req as { raw?: object }).raw ?? req);
}

/** What a client may name as a part of its key's tenant. */
const TENANT_PART = /^[\w.-]{1,64}$/;

/**
 * The tenant of a call made with a key: the key's own (`keyTenant`, see `keyTenant()`), or a
 * part of it that the request names in `x-switchboard-tenant` (`key-<digest>/<part>`). A key never names another tenant,
 * and its parts wait in its one turn of the switchboard's queue (see `tenantOf`).
 */
function callTenant(keyTenant: string, named: string | string[] | undefined): string {
  if (named === undefined || named === '') return keyTenant;
  if (typeof named !== 'string' || !TENANT_PART.test(named)) {
    throw new GatewayRefusal(
      400,
      "x-switchboard-tenant names a part of your key's tenant: 1 to 64 letters, digits, " +
        "'_', '.' or '-'.",
      'invalid_tenant',
    );
  }
  return `${keyTenant}/${named}`;
}

/** A request as the guard reads it: Node's own, or Fastify's (the same fields). */
export interface GuardedRequest {
  method?: string;
  url?: string;
  originalUrl?: string;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
}

/**
 * The gateway's door, before any controller runs (so nothing reaches an upstream):
 * - with keys (`GATEWAY_API_KEYS`), every route but the probes (`/health`, `/health/ready`,
 *   `/health/live`) and the status page's files wants one, as `Authorization: Bearer` or
 *   `x-api-key`: 401 otherwise;
 * - without keys (the gateway then listens on loopback only), a `Host` that is not a loopback
 *   name is refused with 403: a page on another site that rebinds its DNS name to 127.0.0.1
 *   reaches the port, but not with our name in `Host`; so is a request a page of another site
 *   sent (its `Origin`, or `Sec-Fetch-Site: cross-site`), and a `/v1` POST that is not JSON gets
 *   415 (a page can send text/plain anywhere without a CORS preflight);
 * - per key, optional calls in flight on `/v1`: 429 with `retry-after` (a key's limits per
 *   minute are its tenant's policy in the switchboard, which answers the 429 itself);
 * - each key is a tenant of the switchboard's queue (`key-` and 12 hex digits of the key's
 *   SHA-256: derived from the key, never its place in the list, and never the key);
 *   `x-switchboard-tenant` may name a part of it (`key-<digest>/<part>`), which waits in the
 *   key's own turn, never another tenant;
 * - the mark-down endpoint wants a JSON body (a foreign page cannot send one without a CORS
 *   preflight, which the gateway does not answer) and an `ms` of at most a day.
 *
 * Refusals are {@link GatewayRefusal}s, which the exception filter answers in the API's shape.
 */
@Injectable()
export class GatewayGuard implements CanActivate {
  constructor(
    @Inject(GatewayKeys) private readonly keys: GatewayKeys,
    @Inject(KeyLimits) private readonly limits: KeyLimits,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') return true;
    const http = context.switchToHttp();
    const req = http.getRequest<GuardedRequest & { raw?: object }>();
    // The gateway's door checked it on its headers before its body was read: once is enough
    // (a second pass would spend the key's limits twice).
    if (!admitted.has(req.raw ?? req)) this.check(req, http.getResponse<unknown>());
    if (req.method === 'POST' && MARK_DOWN.test(pathOf(req.originalUrl ?? req.url))) {
      checkMarkDownBody(req);
    }
    return true;
  }

  /**
   * Everything about one request that its headers decide, as Node's (or Fastify's) request and
   * response: returns when it may pass, throws the {@link GatewayRefusal} otherwise. It reads no
   * body, so that the gateway's door runs it before any body is read.
   */
  check(req: GuardedRequest, res: unknown): void {
    const path = pathOf(req.originalUrl ?? req.url);
    if (this.keys.size === 0) {
      this.checkHost(req);
      checkSite(req);
      // A page on another site can POST text/plain without a CORS preflight, but not JSON.
      if (req.method === 'POST' && path.startsWith('/v1/')) {
        requireJson(
          req,
          'This gateway runs without GATEWAY_API_KEYS: its API takes only JSON bodies ' +
            '(content-type: application/json).',
        );
      }
    } else if (!OPEN.has(path)) {
      const key = this.authenticate(req);
      if (path.startsWith('/v1/')) {
        const tenant = callTenant(this.keys.tenantOf(key), req.headers[TENANT_HEADER]);
        this.admit(key, res);
        req.headers[TENANT_HEADER] = tenant;
      }
      keyOfRequest.set((req as { raw?: object }).raw ?? req, key);
    }
    if (req.method === 'POST' && MARK_DOWN.test(path)) {
      requireJson(req, 'The mark-down endpoint takes a JSON body (application/json).');
    }
    admitted.add((req as { raw?: object }).raw ?? req);
  }

  private checkHost(req: GuardedRequest): void {
    const host = req.headers.host;
    if (typeof host === 'string' && !isLoopbackHost(host)) {
      throw new GatewayRefusal(
        403,
        'This gateway runs without GATEWAY_API_KEYS and answers only requests addressed to a ' +
          'loopback name (localhost, 127.0.0.1, [::1]).',
        'forbidden_host',
      );
    }
  }

  private authenticate(req: GuardedRequest): number {
    const presented = presentedKey(req.headers);
    const key = presented === undefined ? undefined : this.keys.match(presented);
    if (key !== undefined) return key;
    throw new GatewayRefusal(
      401,
      presented === undefined
        ? 'Missing API key: send it as `Authorization: Bearer <key>` or `x-api-key: <key>`.'
        : 'Invalid API key.',
      'invalid_api_key',
      { 'www-authenticate': 'Bearer' },
    );
  }

  private admit(key: number, res: unknown): void {
    if (!this.limits.enabled) return;
    const admission = this.limits.admit(key);
    if (!admission.ok) {
      const headers = retryHeaders(admission.retryAfterMs);
      throw new GatewayRefusal(
        429,
        `${admission.reason}: retry after ${headers['retry-after']} s.`,
        'rate_limit_exceeded',
        headers,
      );
    }
    // Express hands over the ServerResponse, Fastify its reply around it.
    const raw = (res as { raw?: ServerResponse }).raw ?? (res as ServerResponse);
    raw.once('close', admission.release);
  }
}

/** 415 unless the body is declared as JSON: what no page of another site sends unasked. */
function requireJson(req: GuardedRequest, message: string): void {
  const type = req.headers['content-type'];
  if (typeof type !== 'string' || !/^application\/json\s*(;|$)/i.test(type)) {
    throw new GatewayRefusal(415, message, 'unsupported_media_type');
  }
}

/**
 * 403 for a request a page of another site sent: its `Origin` is not a loopback origin (`null`,
 * from a sandboxed frame or a file, is none), or the browser says `Sec-Fetch-Site: cross-site`.
 * Without keys, anything that reaches the port may spend quota; a browser is the one such client
 * that other sites can drive, and it says where the request comes from.
 */
function checkSite(req: GuardedRequest): void {
  const origin = req.headers.origin;
  const crossSite =
    req.headers['sec-fetch-site'] === 'cross-site' ||
    (typeof origin === 'string' && !isLoopbackOrigin(origin));
  if (crossSite) {
    throw new GatewayRefusal(
      403,
      'This gateway runs without GATEWAY_API_KEYS and answers no request sent by a page of ' +
        'another site.',
      'forbidden_origin',
    );
  }
}

function isLoopbackOrigin(origin: string): boolean {
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackHost(url.host);
  } catch {
    return false;
  }
}

function checkMarkDownBody(req: GuardedRequest): void {
  const ms = (req.body as { ms?: unknown } | undefined)?.ms;
  if (typeof ms === 'number' && ms > MAX_MARK_DOWN_MS) {
    throw new GatewayRefusal(400, `ms must be at most ${MAX_MARK_DOWN_MS} (one day).`);
  }
}

import { PROVIDERS } from '../providers/index';
import { isNoRoom } from '../quota/no-room';
import { SwitchboardError } from '../switchboard.error';
import type { Problem } from './error-body';

/** The longest wait a 429 or 503 tells a client: beyond it, the client should come back and ask. */
export const MAX_RETRY_AFTER_MS = 60_000;

/**
 * What an HTTP answer for a failed call says: its status and message, the upstream's own error
 * body when it has the API's shape, and for 429 and 503 when to retry.
 */
export interface HttpError extends Problem {
  /** When to retry, in ms (429 and 503): whole, ≥ 1 and ≤ {@link MAX_RETRY_AFTER_MS}. */
  retryAfterMs?: number;
  /** The SDK error's `error` member (the upstream's body as the SDK kept it), if any. */
  upstream?: { error?: unknown };
}

type Upstream = Error & { status?: unknown; headers?: Headers; error?: unknown };

const SDKS = [PROVIDERS.openai.errors, PROVIDERS.anthropic.errors];
const isA = (
  error: unknown,
  name: 'APIError' | 'APIConnectionError' | 'APIConnectionTimeoutError',
) => SDKS.some((errors) => error instanceof errors[name]);

/**
 * The HTTP answer for an error a switchboard call failed with:
 * - the SDK's timeout 504, connection errors 502;
 * - the SDK's `APIError`: the upstream's status (and body); a 429, the switchboard's own when no
 *   deployment had room, says when to retry: the no-room error's own figure, else the shortest
 *   cooldown left (`cooldownMs`), else the upstream's `retry-after`, capped at
 *   {@link MAX_RETRY_AFTER_MS};
 * - a {@link SwitchboardError}: its own `status` (400, 404, 500; 503 with `retry-after`);
 * - a `TypeError` from the call's arguments: 400; anything else 500.
 *
 * @example
 * ```ts
 * const http = httpError(error, () => shortestCooldown(model));
 * res.writeHead(http.status, http.retryAfterMs ? retryHeaders(http.retryAfterMs) : {});
 * ```
 */
export function httpError(error: unknown, cooldownMs: () => number | undefined): HttpError {
  const e = error as Upstream;
  if (isA(error, 'APIConnectionTimeoutError')) {
    return { status: 504, message: 'The upstream deployment did not answer in time.' };
  }
  if (isA(error, 'APIConnectionError')) {
    return { status: 502, message: 'The upstream deployment could not be reached.' };
  }
  if (isA(error, 'APIError') && typeof e.status === 'number') {
    if (e.status !== 429) return { status: e.status, message: e.message, upstream: e };
    if (isNoRoom(error)) {
      // The switchboard's own: its message says why and when, after the SDK's status prefix.
      const message = e.message.replace(/^429 /, '');
      return { status: 429, message, retryAfterMs: bounded(headerMs(e.headers)) };
    }
    const ms = bounded(cooldownMs() ?? headerMs(e.headers));
    return {
      status: 429,
      message: `Every deployment tried is rate limited: retry after ${Math.ceil(ms / 1000)} s.`,
      retryAfterMs: ms,
    };
  }
  if (error instanceof SwitchboardError) {
    const status = error.status;
    return status === 503
      ? { status, message: error.message, retryAfterMs: 1000 }
      : { status, message: error.message };
  }
  if (error instanceof TypeError) return { status: 400, message: error.message };
  return { status: 500, message: 'The switchboard failed to handle the request.' };
}

/**
 * `retry-after` (whole seconds, ≥ 1) and `retry-after-ms` for a wait.
 *
 * @example
 * ```ts
 * retryHeaders(1500); // { 'retry-after': '2', 'retry-after-ms': '1500' }
 * ```
 */
export function retryHeaders(ms: number): Record<string, string> {
  const wait = bounded(ms);
  return {
    'retry-after': String(Math.max(1, Math.ceil(wait / 1000))),
    'retry-after-ms': String(wait),
  };
}

/** What the upstream's (or the no-room error's) headers say, in ms; 1 s when they say nothing. */
function headerMs(headers: Headers | undefined): number {
  const ms = Number(headers?.get?.('retry-after-ms'));
  if (ms > 0) return ms;
  const s = Number(headers?.get?.('retry-after'));
  return s > 0 ? s * 1000 : 1000;
}

function bounded(ms: number): number {
  if (!(ms > 0)) return 1000;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(1, Math.ceil(ms)));
}

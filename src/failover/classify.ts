import type { ProviderErrors } from '../registry/deployment';
import { DEFAULT_MAX_COOLDOWN, upstreamWait } from '../runtime/upstream-numbers';
import { SwitchboardError } from '../switchboard.error';
import type { FailureReason } from '../types';
import { isFirstTokenTimeout } from './first-token-timeout';
import { TokenProviderError } from './token-provider.error';
import { unreachableWhy } from './unreachable';

export type { FailureReason } from '../types';

/** What a failed attempt means for the deployment and for the call. */
export interface Verdict {
  reason: FailureReason;
  /** Worth another attempt on another deployment. */
  retry: boolean;
  /** Mark the model down now: for this many ms, or for its configured cooldown (`'default'`). */
  markDown?: number | 'default';
  /** Counts toward the consecutive-failure limit (5xx, malformed answers). */
  countsAsFailure: boolean;
  /**
   * What health, `stats()` and the status page say while the mark-down lasts, when the reason
   * alone would not: `unauthorized (401)`, `not deployed`, `quota exhausted until <ISO time>`.
   */
  why?: string;
}

/**
 * A 429 whose `retry-after` is longer than this is a daily or tier quota that ran out, not the
 * per-minute one: Azure's per-minute windows (tokens per 60 s, requests per 10 s) never ask for
 * more than a minute, while an exhausted daily quota asks for hours. Five minutes keeps a wide
 * margin on both sides.
 */
export const QUOTA_EXHAUSTED_AFTER_MS = 5 * 60_000;

/** Codes of a 404 that says the upstream has no deployment (model) of that name. */
const NOT_DEPLOYED_CODES = new Set(['DeploymentNotFound', 'model_not_found']);

/** A fault of the deployment itself, the same for every call: avoid it, and fail over. */
const deploymentFault = (reason: FailureReason, why: string): Verdict => ({
  reason,
  retry: true,
  markDown: 'default',
  countsAsFailure: false,
  why,
});

const NO_RETRY = (reason: FailureReason): Verdict => ({
  reason,
  retry: false,
  countsAsFailure: false,
});

/** Error codes of a connection that broke under the request. */
const CONNECTION_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);

/**
 * A connection that dropped under a running request, as undici reports it outside the SDK's own
 * handling: `TypeError: terminated` (a body or stream cut short), or an error whose code (or whose
 * cause's code) is a socket error. Checked by shape, not `instanceof`: under Jest, errors from
 * Node's own realm fail `instanceof Error`, and the SDK then re-wraps them as
 * `Error('TypeError: terminated')`.
 */
export function isDroppedConnection(error: unknown): boolean {
  let e: unknown = error;
  for (let depth = 0; typeof e === 'object' && e !== null && depth < 4; depth++) {
    const { code, name, message } = e as { code?: unknown; name?: unknown; message?: unknown };
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
    if (message === 'terminated' && name === 'TypeError') return true;
    if (message === 'TypeError: terminated') return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * A body that is not the JSON it claims to be: the `SyntaxError` of a JSON parser, raw or as the
 * `cause` of the SDK error the switchboard turned it into. Checked by shape, not `instanceof`: a
 * body parsed by undici (`response.json()`) throws in Node's own realm, which differs under Jest.
 */
export function isMalformedResponse(error: unknown): boolean {
  for (let e = error, depth = 0; typeof e === 'object' && e !== null && depth < 2; depth++) {
    if ((e as { name?: unknown }).name === 'SyntaxError') return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * A failure of the deployment's token provider ({@link TokenProviderError}), as the SDK reports
 * it: its own error with ours as the `cause`.
 */
function isTokenFailure(error: unknown): boolean {
  let e: unknown = error;
  for (let depth = 0; typeof e === 'object' && e !== null && depth < 3; depth++) {
    if (e instanceof TokenProviderError) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The `code` of an error body: `error.code` (OpenAI's shape, Azure's on both routes). */
function errorCode(error: unknown): unknown {
  const { code, error: body } = error as { code?: unknown; error?: unknown };
  if (typeof code === 'string') return code;
  if (typeof body !== 'object' || body === null) return undefined;
  const inner = (body as { code?: unknown; error?: unknown }).code;
  if (typeof inner === 'string') return inner;
  const nested = (body as { error?: unknown }).error;
  return typeof nested === 'object' && nested !== null
    ? (nested as { code?: unknown }).code
    : undefined;
}

/**
 * Decides, from an error of either SDK, whether to retry and whether to mark the model down,
 * following the design's table. `APIConnectionTimeoutError` extends `APIConnectionError`, so it is
 * tested first. Faults of one deployment (401, 403, Azure's 404 `DeploymentNotFound`, a token
 * provider that failed, a 429 for hours) mark the model down there and fail over; a 400 stays
 * the caller's. A 429's wait is at most `maxWait` (the switchboard's `maxCooldown`), however
 * long the upstream asked for.
 *
 * @example
 * ```ts
 * const { reason, retry } = classify(error, deployment.errors);
 * ```
 */
export function classify(
  error: unknown,
  errors: ProviderErrors,
  now: number = Date.now(),
  maxWait: number = DEFAULT_MAX_COOLDOWN,
): Verdict {
  if (error instanceof SwitchboardError) return NO_RETRY('switchboard');
  if (error instanceof errors.APIUserAbortError) return NO_RETRY('aborted');
  // Before the connection checks: a credential that could not reach its identity endpoint
  // carries a socket error as its cause.
  if (isTokenFailure(error)) {
    return deploymentFault('unauthorized', 'unauthorized (the token provider failed)');
  }
  if (error instanceof errors.APIConnectionTimeoutError) {
    const reason = isFirstTokenTimeout(error) ? 'first_token_timeout' : 'timeout';
    return { reason, retry: true, countsAsFailure: false };
  }
  if (error instanceof errors.APIConnectionError) return connectionLost(error);
  if (error instanceof errors.APIError) {
    const { status, headers } = error as Error & { status?: number; headers?: unknown };
    if (status === 429) {
      const wait = retryAfterMs(headers, now, maxWait);
      if (wait !== undefined && wait > QUOTA_EXHAUSTED_AFTER_MS) {
        return {
          reason: 'quota_exhausted',
          retry: true,
          markDown: wait,
          countsAsFailure: false,
          why: `quota exhausted until ${new Date(now + wait).toISOString()}`,
        };
      }
      return {
        reason: 'rate_limit',
        retry: true,
        markDown: wait ?? 'default',
        countsAsFailure: false,
      };
    }
    if (status === undefined || status >= 500) {
      // No status: an error event inside a stream, or a body that could not be read or parsed.
      const reason =
        status === undefined && isMalformedResponse(error) ? 'malformed_response' : 'server_error';
      return { reason, retry: true, countsAsFailure: true };
    }
    if (status === 401 || status === 403) {
      return deploymentFault('unauthorized', `unauthorized (${status})`);
    }
    if (status === 404 && NOT_DEPLOYED_CODES.has(errorCode(error) as string)) {
      return deploymentFault('not_deployed', 'not deployed');
    }
    if (status === 408 || status === 409) {
      return { reason: 'client_error', retry: true, countsAsFailure: false };
    }
    return NO_RETRY('client_error');
  }
  if (isDroppedConnection(error)) return connectionLost(error);
  if (isMalformedResponse(error)) {
    return { reason: 'malformed_response', retry: true, countsAsFailure: true };
  }
  return NO_RETRY('other');
}

/**
 * A connection that broke, or was never made: the model cools for its `cooldown`; one that was
 * never made says so in its reason ({@link unreachableWhy}), which lets calls fail at once while
 * every deployment of a model is unreachable.
 */
function connectionLost(error: unknown): Verdict {
  const why = unreachableWhy(error);
  const verdict: Verdict = {
    reason: 'connection',
    retry: true,
    markDown: 'default',
    countsAsFailure: false,
  };
  if (why !== undefined) verdict.why = why;
  return verdict;
}

/**
 * How long the upstream asked us to wait: `retry-after-ms`, else `retry-after` in seconds or as an
 * HTTP date, at most `max` (`Infinity`, `1e300` and a date in the year 275760 are `max`).
 * Undefined when neither is there or readable (empty, negative, not a number).
 *
 * @example
 * ```ts
 * retryAfterMs(new Headers({ 'retry-after': '2' })); // 2000
 * retryAfterMs(new Headers({ 'retry-after': '1e300' }), Date.now(), 60_000); // 60000
 * ```
 */
export function retryAfterMs(
  headers: unknown,
  now: number = Date.now(),
  max: number = DEFAULT_MAX_COOLDOWN,
): number | undefined {
  const get = (name: string): string | null | undefined => {
    if (!headers || typeof headers !== 'object') return undefined;
    if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name);
    const v = (headers as Record<string, unknown>)[name];
    return typeof v === 'string' ? v : undefined;
  };
  const ms = upstreamWait(Number.parseFloat(get('retry-after-ms') ?? ''), max);
  if (ms !== undefined) return ms;
  const raw = get('retry-after');
  if (!raw) return undefined;
  const seconds = upstreamWait(raw, Infinity);
  if (seconds !== undefined) return upstreamWait(seconds * 1000, max);
  const date = Date.parse(raw);
  if (Number.isFinite(date)) return upstreamWait(Math.max(0, date - now), max);
  return undefined;
}

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { isDroppedConnection, isMalformedResponse, retryAfterMs } from '../failover/classify';
import { SwitchboardError } from '../switchboard.error';
import { MAX_HELD_BACK_WAIT_MS, waitsForPeriodEnd } from '../errors/held-back';
import { MAX_RETRY_AFTER_MS, retryHeaders } from '../errors/retry-headers';
import { scrub, STACK_LIMIT } from '../errors/scrub';

export { MAX_RETRY_AFTER_MS, retryHeaders };

/** What a caller is told when a deployment refused the switchboard's own credentials (401, 403). */
export const CREDENTIALS_REFUSED =
  "The upstream deployment refused the switchboard's credentials (its own, not the caller's).";

/** What a closed switchboard (or a queue closed at shutdown) asks a client to wait: another instance is likely up. */
const UNAVAILABLE_RETRY_AFTER_MS = 1_000;

/** How an error is answered over HTTP, before it is put in an API's own body shape. */
export interface HttpErrorAnswer {
  status: number;
  message: string;
  /**
   * `retry-after` (integer seconds, at least 1) and `retry-after-ms` (integer) on a 429 or 503:
   * when room is expected, capped by `maxRetryAfterMs`. Empty otherwise.
   */
  headers: Record<string, string>;
  /** The upstream answered this error itself: its own body may be passed on (not for a 429). */
  fromUpstream: boolean;
  /** Nobody expected it (a bug, not a refusal): worth a log line with its stack. */
  unexpected: boolean;
}

/** Options of {@link httpErrorFor}. */
export interface HttpErrorOptions {
  /** The cap on `retry-after`, in ms; default {@link MAX_RETRY_AFTER_MS}. */
  maxRetryAfterMs?: number;
  /** For an HTTP-date `retry-after` of the upstream; default `Date.now()`. */
  now?: number;
}

/**
 * The one mapping from an error of a switchboard call to an HTTP answer, for a gateway or a relay:
 * - a `SwitchboardError` answers its own `status`: 400 for the caller's mistake, 404 for an unknown
 *   model, 503 (with `retry-after`) once the switchboard is closed or closed the queue the call
 *   waited in, 500 for its configuration;
 * - a 429 (the switchboard's own no-room error, or the upstream's) carries `retry-after` and
 *   `retry-after-ms` from the error's own figure of when room is expected, at least 1 s and at
 *   most `maxRetryAfterMs` (the switchboard's own refusal of a tenant over its budget: up to the
 *   period's end);
 * - an upstream's 401 or 403 is 502 with a message of its own: the deployment refused the
 *   switchboard's credentials, not the caller's (the reason is in the logs, health and the
 *   deployment's mark-down, never the upstream's words, which may name the key);
 * - an upstream's other HTTP errors keep their status, and their message {@link scrub}bed of
 *   anything shaped like a credential, and clipped;
 * - a timeout is 504, a connection that failed or an answer that is not valid JSON 502, a
 *   `TypeError` (params the SDK cannot take) 400, anything else 500.
 *
 * @example
 * ```ts
 * try {
 *   res.json(await sb.chat.completions.create(body));
 * } catch (error) {
 *   const { status, message, headers } = httpErrorFor(error);
 *   res.status(status).set(headers).json({ error: { message } });
 * }
 * ```
 */
export function httpErrorFor(error: unknown, options: HttpErrorOptions = {}): HttpErrorAnswer {
  const max = Math.max(1_000, options.maxRetryAfterMs ?? MAX_RETRY_AFTER_MS);
  const answer = (status: number, message: string, fromUpstream = false): HttpErrorAnswer => ({
    status,
    // Every message, the switchboard's own included: one may quote a value a client must not see.
    message: scrub(message, STACK_LIMIT),
    headers: {},
    fromUpstream,
    unexpected: false,
  });
  if (error instanceof SwitchboardError) {
    const a = answer(error.status, error.message);
    if (a.status === 503) a.headers = retryHeaders(UNAVAILABLE_RETRY_AFTER_MS, max);
    return a;
  }
  if (
    error instanceof OpenAI.APIConnectionTimeoutError ||
    error instanceof Anthropic.APIConnectionTimeoutError
  ) {
    return answer(504, 'The upstream deployment did not answer in time.');
  }
  if (
    error instanceof OpenAI.APIConnectionError ||
    error instanceof Anthropic.APIConnectionError ||
    isDroppedConnection(error)
  ) {
    return answer(502, 'The upstream deployment could not be reached.');
  }
  if (isMalformedResponse(error)) {
    // The deployment's fault, as a dropped connection is: not the gateway's own failure (500).
    return answer(502, 'The upstream deployment answered with a body that is not valid JSON.');
  }
  if (error instanceof OpenAI.APIError || error instanceof Anthropic.APIError) {
    const { status, headers } = error as Error & { status?: unknown; headers?: unknown };
    if (status === 401 || status === 403) {
      return answer(502, CREDENTIALS_REFUSED);
    }
    if (typeof status === 'number') {
      const a = answer(status, scrub(error.message), status !== 429);
      if (status === 429 || status === 503) {
        // A tenant's day or budget comes back only at the end of the UTC day or month: the
        // switchboard's own figure, which the cap on other waits must not shorten.
        const cap = waitsForPeriodEnd(error) ? Math.max(max, MAX_HELD_BACK_WAIT_MS) : max;
        const wait =
          retryAfterMs(headers, options.now ?? Date.now(), cap) ?? UNAVAILABLE_RETRY_AFTER_MS;
        a.headers = retryHeaders(wait, cap);
      }
      if (status === 429) {
        a.message = `Rate limited: retry after ${a.headers['retry-after']} s. ${scrub(error.message)}`;
      }
      return a;
    }
  }
  if (error instanceof TypeError) return answer(400, error.message);
  return {
    ...answer(500, 'The gateway failed to handle the request.'),
    unexpected: true,
  };
}

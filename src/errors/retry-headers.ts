/**
 * The longest wait an HTTP answer asks a client for. Quotas are per-minute windows, so room comes
 * back within a minute unless a deployment was marked down for longer; a client that asks again
 * too early is told again, while one told to wait an hour (or `1e297` s) waits for nothing.
 */
export const MAX_RETRY_AFTER_MS = 60_000;

/**
 * `retry-after` (whole seconds, rounded up, at least 1) and `retry-after-ms` (whole ms) for a wait
 * of `ms`, capped at `max`; a wait that is not a finite number counts as the cap. Every answer
 * that tells a client when to come back (the gateway's, the switchboard's own 429s) builds its
 * headers here, so the two always agree.
 *
 * @example
 * ```ts
 * retryHeaders(1e300, 60_000); // { 'retry-after': '60', 'retry-after-ms': '60000' }
 * retryHeaders(1_500, Infinity); // { 'retry-after': '2', 'retry-after-ms': '1500' }
 * ```
 */
export function retryHeaders(ms: number, max: number = MAX_RETRY_AFTER_MS): Record<string, string> {
  const wait = Number.isFinite(ms) ? Math.min(max, Math.max(1, Math.ceil(ms))) : max;
  return {
    'retry-after': String(Math.max(1, Math.ceil(wait / 1000))),
    'retry-after-ms': String(wait),
  };
}

/*
 * Redirects are never followed. A followed redirect sends the request again, to wherever the
 * `Location` says: undici drops only `Authorization` across origins, so Foundry's `x-api-key`
 * and, after a 307 or 308, the prompt itself would reach a host nobody configured. The clients
 * the switchboard builds take a redirect as the answer it is, and it becomes a fault of the
 * deployment that names where it pointed.
 */
import { clip } from '../errors/clip';
import type { ProviderErrors } from '../registry/deployment';

/**
 * The `fetchOptions` of every SDK client the switchboard builds: a 3xx comes back as it is, and
 * nothing is sent to its `Location`.
 *
 * @example
 * ```ts
 * new OpenAI({ baseURL, apiKey, fetchOptions: NO_REDIRECTS });
 * ```
 */
export const NO_REDIRECTS: { readonly redirect: 'manual' } = Object.freeze({ redirect: 'manual' });

/**
 * The connection error a redirect of `deployment` becomes, or `undefined` when `error` is not an
 * SDK error of a 3xx status. It names the status and the host the `Location` points to, never
 * its path or query (which may carry a token).
 *
 * @example
 * ```ts
 * redirected('east', error, deployment.errors)?.message;
 * // "Deployment east redirected (307) to evil.example:443; redirects are not followed."
 * ```
 */
export function redirected(
  deployment: string,
  error: unknown,
  errors: ProviderErrors,
): Error | undefined {
  if (!(error instanceof errors.APIError)) return undefined;
  const { status, headers } = error as Error & { status?: unknown; headers?: unknown };
  if (typeof status !== 'number' || status < 300 || status > 399) return undefined;
  const location =
    typeof (headers as Headers | undefined)?.get === 'function'
      ? (headers as Headers).get('location')
      : null;
  const where = location === null ? 'no Location' : hostOf(location);
  return new errors.APIConnectionError({
    // Without the 3xx as its cause: the message says all of it, and is what a report's "root
    // cause" shows.
    message: `Deployment ${deployment} redirected (${status}) to ${where}; redirects are not followed.`,
  });
}

function hostOf(location: string): string {
  try {
    // A relative Location stays on the configured host.
    return clip(new URL(location, 'relative:/').host || 'the same host');
  } catch {
    return 'an unreadable Location';
  }
}

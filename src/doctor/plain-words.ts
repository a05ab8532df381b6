import { classify } from '../failover/classify';
import type { ProviderErrors } from '../registry/deployment';

/**
 * What a failed check request means, in the words a person fixing the configuration needs. The
 * failure classification of the switchboard itself decides what kind of failure it was.
 *
 * @example
 * ```ts
 * inPlainWords(error, deployment.errors, 'gpt4o-east', 30_000);
 * // "no deployment named 'gpt4o-east' on this resource (404 DeploymentNotFound)"
 * ```
 */
export function inPlainWords(
  error: unknown,
  errors: ProviderErrors,
  upstreamName: string,
  timeout: number,
): string {
  const verdict = classify(error, errors);
  const { status, message } = error as { status?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : String(error);
  switch (verdict.reason) {
    case 'unauthorized':
      if (status === 401) return `key not accepted (401): ${text}`;
      if (status === 403) {
        return `access denied (403): the key or identity has no role on this resource: ${text}`;
      }
      return `no token: ${text}`;
    case 'not_deployed':
      return `no deployment named '${upstreamName}' on this resource (404 DeploymentNotFound)`;
    case 'quota_exhausted':
      return verdict.why ?? `quota exhausted (429)`;
    case 'rate_limit':
      return `rate limited (429): the quota is in use now; try again in a minute`;
    case 'timeout':
      return `no answer within ${timeout} ms`;
    case 'connection':
      return `unreachable: ${rootCause(error)}`;
    case 'server_error':
      return typeof status === 'number'
        ? `server error (${status}): ${text}`
        : `server error: ${text}`;
    case 'malformed_response':
      return `answered with a body that is not valid JSON`;
    case 'client_error':
      return `refused the request (${typeof status === 'number' ? status : '4xx'}): ${text}`;
    default:
      return text;
  }
}

/** The innermost message of an error's causes: `connect ECONNREFUSED 127.0.0.1:9`. */
function rootCause(error: unknown): string {
  let e: unknown = error;
  let message = error instanceof Error ? error.message : String(error);
  for (let depth = 0; typeof e === 'object' && e !== null && depth < 5; depth++) {
    const m = (e as { message?: unknown }).message;
    const code = (e as { code?: unknown }).code;
    if (typeof m === 'string' && m !== '') message = m;
    else if (typeof code === 'string') message = code;
    e = (e as { cause?: unknown }).cause;
  }
  return message;
}

import { isDroppedConnection, isMalformedResponse } from '../failover/classify';
import type { Deployment } from '../registry/deployment';
import { redirected } from './redirect';

/** Turn what the SDK or the runtime threw into the SDK error the caller should see. */
export function translate(
  deployment: Deployment,
  error: unknown,
  caller: AbortSignal | undefined,
  timedOut: boolean,
): Error {
  const errors = deployment.errors;
  if (caller?.aborted) {
    return error instanceof errors.APIUserAbortError ? error : new errors.APIUserAbortError();
  }
  if (timedOut) {
    return error instanceof errors.APIConnectionTimeoutError
      ? error
      : new errors.APIConnectionTimeoutError({
          message: `Request to deployment ${deployment.name} timed out.`,
        });
  }
  const redirect = redirected(deployment.name, error, errors);
  if (redirect !== undefined) return redirect;
  if (isDroppedConnection(error) && !(error instanceof errors.APIError)) {
    return new errors.APIConnectionError({
      message: `Connection to deployment ${deployment.name} dropped.`,
      cause: error as Error,
    });
  }
  if (isMalformedResponse(error) && !(error instanceof errors.APIError)) {
    // A direct SDK call would throw the parser's SyntaxError; callers of the switchboard handle
    // the SDK's error classes only.
    const malformed = new errors.APIError(
      undefined,
      undefined,
      `Malformed response from deployment ${deployment.name}: ${(error as Error).message}`,
      undefined,
    );
    Object.defineProperty(malformed, 'cause', { value: error, configurable: true, writable: true });
    return malformed;
  }
  return error instanceof Error ? error : new Error(String(error));
}

import { heldBack, isHeldBack } from '../errors/held-back';
import { explanationText, type DeploymentExplanation } from '../errors/explanation';
import { retryHeaders } from '../errors/retry-headers';
import { tokensOf, type Admission } from './admission';

/** The SDK's `RateLimitError` class (same constructor in `openai` and `@anthropic-ai/sdk`). */
export type RateLimitErrorClass = new (
  status: 429,
  error: object | undefined,
  message: string | undefined,
  headers: Headers,
) => Error;

/**
 * The SDK's own `RateLimitError` (status 429) for a call that no deployment has room for:
 * `retry-after` (seconds) and `retry-after-ms` say when room is expected, the message names the
 * model, the charge, the wait and, in a few words, why each deployment was passed over. The
 * error's `explanations` (and its body's) list them in full ({@link DeploymentExplanation}). The
 * switchboard sent nothing upstream.
 *
 * @example
 * ```ts
 * throw noRoomError(OpenAI.RateLimitError, 'gpt-4o-mini', { input: 900, output: 256 }, 1800);
 * // RateLimitError: 429 No deployment of gpt-4o-mini has room for this call ... in 1800 ms
 * ```
 */
export function noRoomError(
  RateLimitError: RateLimitErrorClass,
  model: string,
  admission: Admission,
  waitMs: number,
  {
    waited = 0,
    explanations = [],
  }: { waited?: number; explanations?: readonly DeploymentExplanation[] } = {},
): Error & { explanations: readonly DeploymentExplanation[] } {
  const wait = Math.max(1, Math.ceil(waitMs));
  const charge = tokensOf(admission);
  const message =
    `No deployment of ${model} has room for this call (${charge} tokens at admission: ` +
    `${admission.input} input + ${admission.output} reserved output) by the upstreams' own count` +
    `${waited > 0 ? ` after waiting ${Math.round(waited)} ms` : ''}: room expected in ${wait} ms` +
    (explanations.length > 0 ? ` (${explanationText(explanations)})` : '');
  return heldBackError(RateLimitError, 'switchboard_no_room', message, wait, { explanations });
}

/**
 * The SDK's own `RateLimitError` (status 429) for a call the switchboard held back itself, with
 * `retry-after` (seconds) and `retry-after-ms` set from `waitMs`, and the deployments'
 * `explanations` when there are any; {@link isNoRoom} knows it, so it is never retried.
 *
 * @example
 * ```ts
 * throw heldBackError(OpenAI.RateLimitError, 'switchboard_tenant_limit', 'Tenant acme is over its tpm', 12_000);
 * ```
 */
export function heldBackError(
  RateLimitError: RateLimitErrorClass,
  code: string,
  message: string,
  waitMs: number,
  {
    explanations = [],
    untilPeriodEnd = false,
  }: { explanations?: readonly DeploymentExplanation[]; untilPeriodEnd?: boolean } = {},
): Error & { explanations: readonly DeploymentExplanation[] } {
  const headers = new Headers(retryHeaders(waitMs, Infinity));
  const body =
    explanations.length > 0
      ? { type: 'rate_limit_error', code, message, explanations }
      : { type: 'rate_limit_error', code, message };
  const error = new RateLimitError(429, body, message, headers) as Error & {
    explanations: readonly DeploymentExplanation[];
  };
  error.explanations = explanations;
  return heldBack(error, untilPeriodEnd);
}

/**
 * True for an error {@link noRoomError} made: nothing was sent, so there is nothing to fail over.
 *
 * @example
 * ```ts
 * if (isNoRoom(error)) console.log('the switchboard held the call back');
 * ```
 */
export function isNoRoom(error: unknown): boolean {
  return isHeldBack(error);
}

/**
 * Why a deployment's answer to a call that does not stream is no answer at all: its body is
 * `null`, or it has none (204, which the SDKs hand back as `null`). A `SyntaxError`, as a body
 * that is not JSON is: that deployment's fault, failed over, never a `TypeError` in the caller's
 * hands. Undefined for an answer that is an object.
 *
 * @example
 * ```ts
 * noAnswer(null, new Response(null, { status: 204 }))?.message;
 * // 'The deployment answered 204 without a JSON object'
 * ```
 */
export function noAnswer(data: unknown, response: Response | undefined): SyntaxError | undefined {
  if (typeof data === 'object' && data !== null) return undefined;
  return new SyntaxError(
    `The deployment answered ${response?.status ?? 'a status'} without a JSON object`,
  );
}

/**
 * A deployment's token provider (an `apiKey` function, such as `@azure/identity`'s
 * `getBearerTokenProvider`) threw or gave no token. The switchboard treats it like a 401 from that
 * deployment: the model there is marked down and the call fails over. The SDK reports it to the
 * caller as its own error, with this one as the `cause` and its message in the SDK's.
 *
 * @example
 * ```ts
 * try {
 *   await sb.chat.completions.create({ model: 'gpt-4o', messages });
 * } catch (error) {
 *   if ((error as Error).cause instanceof TokenProviderError) console.log('fix the identity');
 * }
 * ```
 */
export class TokenProviderError extends Error {
  override readonly name = 'TokenProviderError';

  constructor(
    /** The deployment whose token provider failed. */
    readonly deployment: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`deployment '${deployment}': the token provider ${detail}`, options);
  }
}

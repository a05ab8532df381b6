/**
 * The one error class the switchboard raises on its own behalf: bad configuration, a model that no
 * deployment serves, a call on the wrong API for a model. Errors from the upstream deployments are
 * the SDKs' own classes (`OpenAI.RateLimitError`, `Anthropic.APIConnectionError`, ...), passed on
 * unchanged.
 *
 * @example
 * ```ts
 * try {
 *   await sb.chat.completions.create({ model: 'gpt-5', messages });
 * } catch (err) {
 *   if (err instanceof SwitchboardError) console.error('configuration problem:', err.message);
 *   else throw err;
 * }
 * ```
 */
export class SwitchboardError extends Error {
  override readonly name = 'SwitchboardError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * What kind of failure a {@link SwitchboardError} is, and so what a gateway answers for it:
 * - `invalid_request`: the caller's call is wrong (a bad parameter, a model on the wrong API, a
 *   call that can never fit); 400, do not retry unchanged.
 * - `model_not_found`: no deployment serves the model; 404.
 * - `unavailable`: the switchboard is closed, or closed while the call waited; 503, retry elsewhere
 *   or later.
 * - `config`: the switchboard's own configuration or an adapter is wrong; 500.
 */
import type { DeploymentExplanation } from './errors/explanation';

export type SwitchboardErrorCode = 'invalid_request' | 'model_not_found' | 'unavailable' | 'config';

const STATUS: Record<SwitchboardErrorCode, number> = {
  invalid_request: 400,
  model_not_found: 404,
  unavailable: 503,
  config: 500,
};

/**
 * The one error class the switchboard raises on its own behalf: bad configuration, a model that no
 * deployment serves, a call on the wrong API for a model, a call after `close()`. Errors from the
 * upstream deployments are the SDKs' own classes (`OpenAI.RateLimitError`,
 * `Anthropic.APIConnectionError`, ...), passed on unchanged. `code` says what kind it is and
 * `status` the HTTP status a gateway answers for it.
 *
 * @example
 * ```ts
 * try {
 *   await sb.chat.completions.create({ model: 'gpt-5', messages });
 * } catch (err) {
 *   if (err instanceof SwitchboardError && err.status === 503) console.error('retry later:', err.message);
 *   else throw err;
 * }
 * ```
 */
export class SwitchboardError extends Error {
  override readonly name = 'SwitchboardError';
  readonly code: SwitchboardErrorCode;
  /**
   * For a call no deployment could take: per deployment considered, why it was not used (tags,
   * a charge above its limits, ...). Empty otherwise.
   */
  readonly explanations: readonly DeploymentExplanation[];

  constructor(
    message: string,
    options?: {
      cause?: unknown;
      code?: SwitchboardErrorCode;
      explanations?: readonly DeploymentExplanation[];
    },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = options?.code ?? 'invalid_request';
    this.explanations = options?.explanations ?? [];
  }

  /** The HTTP status a gateway answers for this error: 400, 404, 503 or 500 (see `code`). */
  get status(): number {
    return STATUS[this.code];
  }
}

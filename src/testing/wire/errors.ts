/**
 * Error bodies of the simulated deployments, in the OpenAI / Azure OpenAI shape and in the
 * Anthropic shape (also what Azure AI Foundry serves under `/anthropic/`): the switchboard's own
 * error-body module builds them, so the simulator and the relay speak one table of types.
 */
import {
  anthropicErrorBody as anthropicBody,
  anthropicErrorType,
  openaiErrorBody as openaiBody,
  type AnthropicErrorBody,
  type OpenAIErrorBody,
} from '../../relay/error-body';

export { anthropicErrorType };

/** The `error.code` the simulator gives an OpenAI answer with a status that has one. */
const SIMULATED_CODES: Readonly<Record<number, string>> = {
  401: 'invalid_api_key',
  403: 'unsupported_country',
  404: 'not_found',
};

/**
 * An error body in the OpenAI shape: `{ error: { message, type, param, code } }`.
 *
 * @example
 * ```ts
 * openaiErrorBody(429, 'Rate limit reached', { type: 'tokens' });
 * // => { error: { message: 'Rate limit reached', type: 'tokens', param: null,
 * //               code: 'rate_limit_exceeded' } }
 * ```
 */
export function openaiErrorBody(
  status: number,
  message: string,
  overrides: { type?: string; code?: string | null; param?: string | null } = {},
): OpenAIErrorBody {
  return openaiBody({
    status,
    message,
    type: overrides.type,
    param: overrides.param,
    code: overrides.code !== undefined ? overrides.code : SIMULATED_CODES[status],
  });
}

/**
 * An error body in the Anthropic shape: `{ type: 'error', error: { type, message } }`
 * (`request_id` added when given).
 *
 * @example
 * ```ts
 * anthropicErrorBody(529, 'Overloaded');
 * // => { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }
 * ```
 */
export function anthropicErrorBody(
  status: number,
  message: string,
  requestId?: string,
): AnthropicErrorBody {
  return anthropicBody({ status, message, requestId });
}

/**
 * The 400 of a request too long for the model's context window, as each API words it: OpenAI and
 * Azure OpenAI `code: 'context_length_exceeded'`; Anthropic `prompt is too long` (the prompt alone)
 * or `input length and \`max_tokens\` exceed context limit`.
 *
 * @example
 * ```ts
 * contextWindowError('openai', 8_000, 20_000, 16).code; // => 'context_length_exceeded'
 * ```
 */
export function contextWindowError(
  provider: 'openai' | 'anthropic',
  window: number,
  prompt: number,
  completion: number,
): { message: string; code?: string; param?: string } {
  if (provider === 'anthropic') {
    return {
      message:
        prompt > window
          ? `prompt is too long: ${prompt} tokens > ${window} maximum`
          : `input length and \`max_tokens\` exceed context limit: ${prompt} + ${completion} > ${window}, decrease input length or \`max_tokens\` and try again`,
    };
  }
  return {
    message:
      `This model's maximum context length is ${window} tokens. However, you requested ` +
      `${prompt + completion} tokens (${prompt} in the messages, ${completion} in the completion). ` +
      'Please reduce the length of the messages or completion.',
    code: 'context_length_exceeded',
    param: 'messages',
  };
}

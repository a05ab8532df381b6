/**
 * Error bodies of the simulated deployments, in the OpenAI / Azure OpenAI shape and in the
 * Anthropic shape (also what Azure AI Foundry serves under `/anthropic/`).
 */

/** Default `error.type` / `error.code` of an OpenAI error answer with `status`. */
function errorKind(status: number): { type: string; code: string | null } {
  if (status === 401) return { type: 'invalid_request_error', code: 'invalid_api_key' };
  if (status === 403) return { type: 'invalid_request_error', code: 'unsupported_country' };
  if (status === 404) return { type: 'invalid_request_error', code: 'not_found' };
  if (status === 429) return { type: 'requests', code: 'rate_limit_exceeded' };
  if (status >= 500) return { type: 'server_error', code: null };
  return { type: 'invalid_request_error', code: null };
}

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
): { error: { message: string; type: string; param: string | null; code: string | null } } {
  const kind = errorKind(status);
  return {
    error: {
      message,
      type: overrides.type ?? kind.type,
      param: overrides.param ?? null,
      code: overrides.code !== undefined ? overrides.code : kind.code,
    },
  };
}

/**
 * The Anthropic `error.type` for an HTTP status (`api_error` for other 5xx,
 * `invalid_request_error` for other 4xx).
 *
 * @example
 * ```ts
 * anthropicErrorType(529); // => 'overloaded_error'
 * ```
 */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
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
): { type: 'error'; error: { type: string; message: string }; request_id?: string } {
  return {
    type: 'error',
    error: { type: anthropicErrorType(status), message },
    ...(requestId !== undefined ? { request_id: requestId } : {}),
  };
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

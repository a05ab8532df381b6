/**
 * What differs between the APIs the gateway serves: the shape of an error, the checks a body must
 * pass before it costs a request, and how a stream event is framed as SSE.
 */

/** A request the gateway answers with an error of its own, in the provider's shape. */
export interface Problem {
  status: number;
  message: string;
  /** The body field at fault (OpenAI's `param`). */
  param?: string;
  /** OpenAI's `code` (`model_not_found`, `missing_required_parameter`, ...). */
  code?: string;
}

/** One API the gateway serves. */
export interface Wire {
  /** The switchboard surface it calls. */
  readonly api: 'chat' | 'responses' | 'embeddings' | 'messages' | 'countTokens';
  /** The path it is served on, for messages that point callers to it. */
  readonly path: string;
  readonly provider: 'openai' | 'anthropic';
  /** The error body for `status`, as the provider's API sends it. */
  errorBody(problem: Problem): object;
  /** The upstream's own error body when it has the provider's shape, else undefined. */
  upstreamErrorBody(error: { error?: unknown }): object | undefined;
  /** Why `body` cannot be sent at all, if it cannot. */
  validate(body: unknown): Problem | undefined;
  /** One stream event as SSE (undefined: the API does not stream). */
  frame?(event: unknown): string;
  /** A stream that failed after its first event ends with this. */
  errorFrame(problem: Problem): string;
  /** Written after the last event, if anything. */
  readonly end?: string;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Checks every API shares: an object with a `model` string and a boolean `stream`, if any. */
function validateModel(body: unknown, missing: (field: string) => Problem): Problem | undefined {
  if (!isRecord(body)) {
    return { status: 400, message: 'The request body must be a JSON object.' };
  }
  if (body.model === undefined) return missing('model');
  if (typeof body.model !== 'string' || body.model === '') {
    return { status: 400, message: 'model must be a non-empty string.', param: 'model' };
  }
  if (body.stream !== undefined && typeof body.stream !== 'boolean') {
    return { status: 400, message: 'stream must be a boolean.', param: 'stream' };
  }
  return undefined;
}

/** The Chat Completions and Messages checks: {@link validateModel} and a `messages` array. */
function validateCommon(body: unknown, missing: (field: string) => Problem): Problem | undefined {
  const problem = validateModel(body, missing);
  if (problem) return problem;
  const { messages } = body as Record<string, unknown>;
  if (messages === undefined) return missing('messages');
  if (!Array.isArray(messages)) {
    return { status: 400, message: 'messages must be an array.', param: 'messages' };
  }
  return undefined;
}

const openaiMissing = (field: string): Problem => ({
  status: 400,
  message: `Missing required parameter: '${field}'.`,
  param: field,
  code: 'missing_required_parameter',
});

const OPENAI_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  403: 'invalid_request_error',
  404: 'invalid_request_error',
  429: 'rate_limit_error',
};

/** The OpenAI error body: `{ error: { message, type, param, code } }`. */
function openaiErrorBody({ status, message, param, code }: Problem): object {
  return {
    error: {
      message,
      type:
        OPENAI_ERROR_TYPES[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error'),
      param: param ?? null,
      code: code ?? (status === 429 ? 'rate_limit_exceeded' : null),
    },
  };
}

// The openai SDK keeps the `error` member of the body.
const openaiUpstreamErrorBody = (e: { error?: unknown }): object | undefined =>
  isRecord(e.error) && typeof e.error.message === 'string' ? { error: e.error } : undefined;

/** OpenAI Chat Completions (`POST /v1/chat/completions`). */
export const openaiWire: Wire = {
  api: 'chat',
  path: '/v1/chat/completions',
  provider: 'openai',
  errorBody: openaiErrorBody,
  upstreamErrorBody: openaiUpstreamErrorBody,
  validate: (body) => validateCommon(body, openaiMissing),
  frame: (event) => `data: ${JSON.stringify(event)}\n\n`,
  errorFrame(problem) {
    return `data: ${JSON.stringify(this.errorBody(problem))}\n\n`;
  },
  end: 'data: [DONE]\n\n',
};

/**
 * OpenAI Responses (`POST /v1/responses`): SSE events carry an `event:` line and no `[DONE]`
 * follows; an error after the first event is an `error` event, which the openai SDK throws.
 */
export const responsesWire: Wire = {
  api: 'responses',
  path: '/v1/responses',
  provider: 'openai',
  errorBody: openaiErrorBody,
  upstreamErrorBody: openaiUpstreamErrorBody,
  validate(body) {
    const problem = validateModel(body, openaiMissing);
    if (problem) return problem;
    const { input } = body as Record<string, unknown>;
    if (input === undefined) return openaiMissing('input');
    if (typeof input !== 'string' && !Array.isArray(input)) {
      return { status: 400, message: 'input must be a string or an array.', param: 'input' };
    }
    return undefined;
  },
  frame: (event) =>
    `event: ${(event as { type?: string }).type ?? 'message'}\ndata: ${JSON.stringify(event)}\n\n`,
  errorFrame(problem) {
    return `event: error\ndata: ${JSON.stringify({ type: 'error', ...this.errorBody(problem) })}\n\n`;
  },
};

/** OpenAI Embeddings (`POST /v1/embeddings`): no streaming. */
export const embeddingsWire: Wire = {
  api: 'embeddings',
  path: '/v1/embeddings',
  provider: 'openai',
  errorBody: openaiErrorBody,
  upstreamErrorBody: openaiUpstreamErrorBody,
  validate(body) {
    const problem = validateModel(body, openaiMissing);
    if (problem) return problem;
    const { input, stream } = body as Record<string, unknown>;
    if (input === undefined) return openaiMissing('input');
    if (stream === true) {
      return { status: 400, message: 'Embeddings do not stream.', param: 'stream' };
    }
    return undefined;
  },
  errorFrame(problem) {
    return JSON.stringify(this.errorBody(problem));
  },
};

const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  502: 'api_error',
  503: 'overloaded_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

/** Anthropic Messages (`POST /v1/messages`), as Claude on Azure AI Foundry serves it. */
export const anthropicWire: Wire = {
  api: 'messages',
  path: '/v1/messages',
  provider: 'anthropic',
  errorBody: ({ status, message }) => ({
    type: 'error',
    error: {
      type:
        ANTHROPIC_ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'),
      message,
    },
  }),
  // The Anthropic SDK keeps the whole body.
  upstreamErrorBody: (e) =>
    isRecord(e.error) && e.error.type === 'error' && isRecord(e.error.error) ? e.error : undefined,
  validate(body) {
    const problem = validateCommon(body, (field) => ({
      status: 400,
      message: `${field}: Field required`,
      param: field,
    }));
    if (problem) return problem;
    const maxTokens = (body as Record<string, unknown>).max_tokens;
    if (maxTokens === undefined) {
      return { status: 400, message: 'max_tokens: Field required', param: 'max_tokens' };
    }
    if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1) {
      return {
        status: 400,
        message: 'max_tokens: Input should be a valid integer greater than or equal to 1',
        param: 'max_tokens',
      };
    }
    return undefined;
  },
  frame: (event) =>
    `event: ${(event as { type?: string }).type ?? 'message'}\ndata: ${JSON.stringify(event)}\n\n`,
  errorFrame(problem) {
    return `event: error\ndata: ${JSON.stringify(this.errorBody(problem))}\n\n`;
  },
};

/**
 * Anthropic token counting (`POST /v1/messages/count_tokens`): a Messages body without
 * `max_tokens`, answered with `{ input_tokens }`; no streaming.
 */
export const countTokensWire: Wire = {
  ...anthropicWire,
  api: 'countTokens',
  path: '/v1/messages/count_tokens',
  validate(body) {
    const problem = validateCommon(body, (field) => ({
      status: 400,
      message: `${field}: Field required`,
      param: field,
    }));
    if (problem) return problem;
    if ((body as Record<string, unknown>).stream !== undefined) {
      return { status: 400, message: 'stream: Extra inputs are not permitted', param: 'stream' };
    }
    return undefined;
  },
};

/** The wire a request path belongs to: `/v1/messages` is Anthropic's, the rest OpenAI's. */
export function wireForPath(path: string): Wire {
  return /^\/v1\/messages(?:[/?]|$)/.test(path) ? anthropicWire : openaiWire;
}

/**
 * Every API the gateway serves, in the order error messages list their paths.
 *
 * @example
 * ```ts
 * WIRES.filter((w) => w.provider === 'openai').map((w) => w.path); // ['/v1/chat/completions', ...]
 * ```
 */
export const WIRES: readonly Wire[] = [
  openaiWire,
  responsesWire,
  embeddingsWire,
  anthropicWire,
  countTokensWire,
];

import { ECHO_LIMIT } from '../errors/clip';
import { scrub, UPSTREAM_TEXT_LIMIT } from '../errors/scrub';
import type { Provider } from '../types';

/**
 * An error the relay answers itself, before or instead of an upstream's: what the API's error
 * body needs.
 *
 * @example
 * ```ts
 * const p: Problem = { status: 400, message: 'messages must be an array.', param: 'messages' };
 * ```
 */
export interface Problem {
  status: number;
  message: string;
  /** The body field at fault (OpenAI's `param`). */
  param?: string | null;
  /**
   * OpenAI's `code` (`model_not_found`, `missing_required_parameter`, ...); `null` says none
   * where the status has a default (`rate_limit_exceeded` on a 429).
   */
  code?: string | null;
  /** The error's `type` when it is not the status's own (a 429 over `tokens`, say). */
  type?: string;
  /** Anthropic's `request_id`, beside the error. */
  requestId?: string;
}

/** The OpenAI error body: `{ error: { message, type, param, code } }`. */
export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** The Anthropic error body: `{ type: 'error', error: { type, message }, request_id? }`. */
export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string };
  request_id?: string;
}

/**
 * OpenAI's `error.type` per status (other 5xx: `server_error`, other 4xx:
 * `invalid_request_error`). OpenAI's own rate-limit answers name what ran out (`requests`,
 * `tokens`); an answer that names no limit says `rate_limit_error`.
 */
const OPENAI_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  403: 'invalid_request_error',
  404: 'invalid_request_error',
  429: 'rate_limit_error',
};

/**
 * Anthropic's `error.type` per status, as its errors page lists them
 * (https://docs.anthropic.com/en/api/errors): other 5xx are `api_error`, other 4xx
 * `invalid_request_error`. 529, not 503, is `overloaded_error`.
 */
const ANTHROPIC_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'conflict_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

/**
 * OpenAI's `error.type` for an answer with `status`.
 *
 * @example
 * ```ts
 * openaiErrorType(503); // 'server_error'
 * ```
 */
export function openaiErrorType(status: number): string {
  return OPENAI_TYPES[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error');
}

/**
 * Anthropic's `error.type` for an answer with `status`.
 *
 * @example
 * ```ts
 * anthropicErrorType(529); // 'overloaded_error'
 * anthropicErrorType(503); // 'api_error'
 * ```
 */
export function anthropicErrorType(status: number): string {
  return ANTHROPIC_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/**
 * The OpenAI error body: `{ error: { message, type, param, code } }`.
 *
 * @example
 * ```ts
 * openaiErrorBody({ status: 404, message: 'No such model', code: 'model_not_found' });
 * ```
 */
export function openaiErrorBody({ status, message, param, code, type }: Problem): OpenAIErrorBody {
  return {
    error: {
      message,
      type: type ?? openaiErrorType(status),
      param: param ?? null,
      code: code !== undefined ? code : status === 429 ? 'rate_limit_exceeded' : null,
    },
  };
}

/**
 * The Anthropic error body: `{ type: 'error', error: { type, message } }`, and `request_id`
 * when there is one.
 *
 * @example
 * ```ts
 * anthropicErrorBody({ status: 400, message: 'max_tokens: Field required' });
 * ```
 */
export function anthropicErrorBody({
  status,
  message,
  type,
  requestId,
}: Problem): AnthropicErrorBody {
  return {
    type: 'error',
    error: { type: type ?? anthropicErrorType(status), message },
    ...(requestId !== undefined ? { request_id: requestId } : {}),
  };
}

/**
 * The error body of `provider`'s API.
 *
 * @example
 * ```ts
 * errorBody('anthropic', { status: 429, message: 'retry later' });
 * ```
 */
export function errorBody(provider: Provider, problem: Problem): object {
  return provider === 'anthropic' ? anthropicErrorBody(problem) : openaiErrorBody(problem);
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A field of an upstream's error body as it is passed on: a string scrubbed, else null. */
const field = (value: unknown, max: number): string | null =>
  typeof value === 'string' ? scrub(value, max) : null;

/**
 * Azure's `innererror` (its content filter's verdict per category: `{ code, content_filter_result:
 * { hate: { filtered, severity } } }`) as it is passed on: flags, numbers and short scrubbed
 * strings, three levels deep and 32 keys a level at most; nothing else an upstream put there.
 */
function verdicts(value: Record<string, unknown>, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value).slice(0, 32)) {
    if (typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) out[key] = v;
    else if (typeof v === 'string') out[key] = scrub(v, ECHO_LIMIT);
    else if (isRecord(v) && depth < 2) out[key] = verdicts(v, depth + 1);
  }
  return out;
}

/**
 * The upstream's own error body, as the SDK kept it, when it has the API's shape: the openai SDK
 * keeps the `error` member, the Anthropic SDK the whole body. Only the API's own fields (and
 * Azure's content-filter verdicts, `innererror`) are passed on, each {@link scrub}bed of anything shaped like a credential and clipped: an upstream
 * that echoes the request's headers, or names the key it refused, passes none of it on.
 *
 * @example
 * ```ts
 * upstreamErrorBody('openai', caught) ?? openaiErrorBody(problem);
 * ```
 */
export function upstreamErrorBody(
  provider: Provider,
  error: { error?: unknown },
): object | undefined {
  const e = error.error;
  if (provider === 'openai') {
    if (!isRecord(e) || typeof e.message !== 'string') return undefined;
    return {
      error: {
        message: scrub(e.message),
        type: field(e.type, ECHO_LIMIT),
        param: field(e.param, ECHO_LIMIT),
        code: field(e.code, ECHO_LIMIT),
        ...(isRecord(e.innererror) ? { innererror: verdicts(e.innererror, 0) } : {}),
      },
    };
  }
  if (!isRecord(e) || e.type !== 'error' || !isRecord(e.error)) return undefined;
  return {
    type: 'error',
    error: {
      type: field(e.error.type, ECHO_LIMIT),
      message: field(e.error.message, UPSTREAM_TEXT_LIMIT),
    },
  };
}

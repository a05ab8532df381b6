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
  param?: string;
  /** OpenAI's `code` (`model_not_found`, `missing_required_parameter`, ...). */
  code?: string;
}

const OPENAI_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  403: 'invalid_request_error',
  404: 'invalid_request_error',
  429: 'rate_limit_error',
};

const ANTHROPIC_TYPES: Readonly<Record<number, string>> = {
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

/**
 * The OpenAI error body: `{ error: { message, type, param, code } }`.
 *
 * @example
 * ```ts
 * openaiErrorBody({ status: 404, message: 'No such model', code: 'model_not_found' });
 * ```
 */
export function openaiErrorBody({ status, message, param, code }: Problem): object {
  return {
    error: {
      message,
      type: OPENAI_TYPES[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error'),
      param: param ?? null,
      code: code ?? (status === 429 ? 'rate_limit_exceeded' : null),
    },
  };
}

/**
 * The Anthropic error body: `{ type: 'error', error: { type, message } }`.
 *
 * @example
 * ```ts
 * anthropicErrorBody({ status: 400, message: 'max_tokens: Field required' });
 * ```
 */
export function anthropicErrorBody({ status, message }: Problem): object {
  return {
    type: 'error',
    error: {
      type: ANTHROPIC_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'),
      message,
    },
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

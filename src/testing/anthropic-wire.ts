/**
 * Anthropic Messages wire format (also what Azure AI Foundry serves under `/anthropic/`) of the
 * simulated deployments: request validation, `Message` bodies, SSE events and errors.
 */
import { sampleJsonSchema } from './json-schema-sample';
import {
  contentText,
  echoText,
  isRecord,
  readMaxTokens,
  sizeCompletion,
  splitDeltas,
  type CompletionPlan,
  type PlanResult,
} from './wire-common';

/**
 * The output format of a Messages request: `output_config.format` (what
 * `anthropic.messages.parse({ output_config: { format: zodOutputFormat(schema) } })` sends) or the
 * older beta `output_format`.
 */
function outputFormat(body: Record<string, unknown>): Record<string, unknown> | undefined {
  const config = body['output_config'];
  if (isRecord(config) && isRecord(config['format'])) return config['format'];
  return isRecord(body['output_format']) ? body['output_format'] : undefined;
}

/**
 * Reads a `POST v1/messages` body into a completion plan, or the reason for a 400.
 * The answer echoes the text of the last `user` message; with a `json_schema` output format it
 * is a JSON sample of the schema.
 */
export function readMessagesRequest(body: unknown, fixedCompletionTokens?: number): PlanResult {
  if (!isRecord(body)) return { ok: false, message: 'Request body must be a JSON object' };
  const model = body['model'];
  if (typeof model !== 'string' || model === '') {
    return { ok: false, message: 'model: Field required', param: 'model' };
  }
  if (body['max_tokens'] === undefined || body['max_tokens'] === null) {
    return { ok: false, message: 'max_tokens: Field required', param: 'max_tokens' };
  }
  const maxTokens = readMaxTokens(body, 'max_tokens');
  if ('error' in maxTokens) return { ok: false, message: maxTokens.error, param: 'max_tokens' };
  const messages = body['messages'];
  if (!Array.isArray(messages)) {
    return { ok: false, message: 'messages: Field required', param: 'messages' };
  }
  if (messages.length === 0) {
    return { ok: false, message: 'messages: at least one message is required', param: 'messages' };
  }
  let promptChars = contentText(body['system']).length;
  let lastUser: unknown = undefined;
  for (const [i, message] of messages.entries()) {
    if (!isRecord(message) || typeof message['role'] !== 'string') {
      return { ok: false, message: `messages.${i}.role: Field required`, param: 'messages' };
    }
    promptChars += contentText(message['content']).length;
    if (message['role'] === 'user') lastUser = message['content'];
  }
  const stream = body['stream'];
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') {
    return { ok: false, message: 'stream: Input should be a valid boolean', param: 'stream' };
  }

  const format = outputFormat(body);
  const answer =
    format?.['type'] === 'json_schema'
      ? JSON.stringify(format['schema'] === undefined ? {} : sampleJsonSchema(format['schema']))
      : echoText(lastUser);
  const sized = sizeCompletion(answer, maxTokens.value, fixedCompletionTokens);
  const plan: CompletionPlan = {
    api: 'messages',
    model,
    stream: stream === true,
    includeUsage: false,
    text: sized.text,
    promptTokens: Math.max(1, Math.ceil(promptChars / 4)),
    completionTokens: sized.completionTokens,
    truncated: sized.truncated,
    maxTokens: maxTokens.value,
  };
  return { ok: true, plan };
}

function usageOf(inputTokens: number, outputTokens: number): Record<string, unknown> {
  return {
    input_tokens: inputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: outputTokens,
    service_tier: 'standard',
  };
}

/** The `Message` body of a non-streaming answer. */
export function messageBody(plan: CompletionPlan, id: string): Record<string, unknown> {
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: plan.model,
    content: [{ type: 'text', text: plan.text }],
    stop_reason: plan.truncated ? 'max_tokens' : 'end_turn',
    stop_sequence: null,
    usage: usageOf(plan.promptTokens, plan.completionTokens),
  };
}

const event = (type: string, data: Record<string, unknown>): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/**
 * The SSE events of a streaming answer, as the real API sends them (with `event:` lines):
 * `message_start` (usage `output_tokens: 1`), `content_block_start`, `ping`, one
 * `content_block_delta` (`text_delta`) per delta, `content_block_stop`, one `message_delta`
 * with the stop reason and the final cumulative `output_tokens`, and `message_stop`.
 */
export function messageFrames(plan: CompletionPlan, id: string): string[] {
  const frames = [
    event('message_start', {
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model: plan.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: usageOf(plan.promptTokens, 1),
      },
    }),
    event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    event('ping', {}),
  ];
  for (const text of splitDeltas(plan.text)) {
    frames.push(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }));
  }
  frames.push(
    event('content_block_stop', { index: 0 }),
    event('message_delta', {
      delta: { stop_reason: plan.truncated ? 'max_tokens' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: plan.completionTokens },
    }),
    event('message_stop', {}),
  );
  return frames;
}

/** An event whose `data:` JSON is cut short, for the `malformed` fault. */
export function malformedMessageFrame(): string {
  return 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{\n\n';
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

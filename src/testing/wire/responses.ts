/**
 * OpenAI / Azure OpenAI Responses wire format of the simulated deployments: request validation,
 * `Response` bodies, the SSE event sequence of `stream: true`, and what a deployment stores to
 * answer `GET responses/{id}` and `previous_response_id`.
 */
import { sampleJsonSchema } from './json-schema-sample';
import {
  contentText,
  echoText,
  isRecord,
  readModelBody,
  typeProblem,
  readMaxTokens,
  sizeCompletion,
  splitDeltas,
  typedEvent,
  type CompletionPlan,
  type PlanResult,
} from './common';

/** The Responses API rejects smaller `max_output_tokens`. */
const MIN_OUTPUT_TOKENS = 16;

/** A response a deployment stored (`store` not false), as `GET responses/{id}` answers it. */
export interface StoredResponse {
  body: Record<string, unknown>;
  /** Input + output tokens: what a chained request carries over as context. */
  contextTokens: number;
}

/** What a Responses answer needs beyond the common plan (internal). */
export interface ResponsesPlan extends CompletionPlan {
  api: 'responses';
  instructions: string | null;
  previousResponseId: string | null;
  store: boolean;
  /** The request's `text` configuration, echoed in the answer. */
  textConfig: Record<string, unknown>;
  /** Request fields the answer echoes as they were sent. */
  echo: Record<string, unknown>;
}

/** The text of one `input` item: message content, or a tool call's output. */
function itemText(item: unknown): string {
  if (typeof item === 'string') return item;
  if (!isRecord(item)) return '';
  if ('content' in item) return contentText(item['content']);
  if (typeof item['output'] === 'string') return item['output'];
  if (typeof item['arguments'] === 'string') return item['arguments'];
  return '';
}

/** Echo text of a message content: plain text or the `input_text` / `output_text` parts. */
function partsText(content: unknown): string {
  if (!Array.isArray(content)) return echoText(content);
  return content
    .map((part) =>
      isRecord(part) &&
      (part['type'] === 'input_text' || part['type'] === 'text') &&
      typeof part['text'] === 'string'
        ? part['text']
        : '',
    )
    .join('');
}

function answerFor(textConfig: Record<string, unknown>, echo: string): string {
  const format = textConfig['format'];
  if (!isRecord(format)) return echo;
  if (format['type'] === 'json_schema') {
    return JSON.stringify(format['schema'] === undefined ? {} : sampleJsonSchema(format['schema']));
  }
  if (format['type'] === 'json_object') return JSON.stringify({ echo });
  return echo;
}

/**
 * Reads a `POST responses` body into a plan, or the reason for a 400 (404 for a
 * `previous_response_id` this deployment does not hold, like Azure OpenAI, where a stored
 * response lives on one resource). The answer echoes the text of the last user input; with a
 * `text.format` of type `json_schema` it is a JSON sample of the schema, so `parse()` succeeds.
 * A chained request's prompt includes the previous response's input and output tokens.
 */
export function readResponsesRequest(
  raw: unknown,
  stored: (id: string) => StoredResponse | undefined,
  fixedCompletionTokens?: number,
): PlanResult<ResponsesPlan> {
  const read = readModelBody(raw, "Missing required parameter: 'model'.");
  if (!read.ok) return read;
  const { body, model } = read;
  const input = body['input'];
  if (typeof input !== 'string' && !Array.isArray(input)) {
    return {
      ok: false,
      message: "Missing required parameter: 'input'.",
      param: 'input',
      code: 'missing_required_parameter',
    };
  }
  const instructions = body['instructions'];
  const instructionsProblem = typeProblem('instructions', instructions, 'string');
  if (instructionsProblem !== undefined) return instructionsProblem;
  const stream = body['stream'];
  const streamProblem = typeProblem('stream', stream, 'boolean');
  if (streamProblem !== undefined) return streamProblem;
  const maxTokens = readMaxTokens(body, 'max_output_tokens');
  if ('error' in maxTokens) {
    return { ok: false, message: maxTokens.error, param: 'max_output_tokens' };
  }
  if (maxTokens.value !== undefined && maxTokens.value < MIN_OUTPUT_TOKENS) {
    return {
      ok: false,
      message:
        "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= " +
        `${MIN_OUTPUT_TOKENS}, but got ${maxTokens.value} instead.`,
      param: 'max_output_tokens',
      code: 'integer_below_min_value',
    };
  }
  const previous = body['previous_response_id'];
  let contextTokens = 0;
  if (previous !== undefined && previous !== null) {
    const found = typeof previous === 'string' ? stored(previous) : undefined;
    if (!found) {
      return {
        ok: false,
        status: 404,
        message: `Previous response with id '${String(previous)}' not found.`,
        param: 'previous_response_id',
        code: 'previous_response_not_found',
      };
    }
    contextTokens = found.contextTokens;
  }

  let prompt = typeof instructions === 'string' ? instructions : '';
  let lastUser = '';
  if (typeof input === 'string') {
    prompt += input;
    lastUser = input;
  } else {
    for (const item of input) {
      prompt += itemText(item);
      if (isRecord(item) && item['role'] === 'user') lastUser = partsText(item['content']);
    }
  }
  const textConfig = isRecord(body['text']) ? body['text'] : {};
  const sized = sizeCompletion(
    answerFor(textConfig, lastUser),
    maxTokens.value,
    fixedCompletionTokens,
  );
  const echo: Record<string, unknown> = {};
  for (const key of ['metadata', 'temperature', 'top_p', 'user', 'tools', 'tool_choice']) {
    if (body[key] !== undefined) echo[key] = body[key];
  }
  return {
    ok: true,
    plan: {
      api: 'responses',
      model,
      stream: stream === true,
      includeUsage: true,
      text: sized.text,
      promptTokens: Math.max(1, Math.ceil(prompt.length / 4)) + contextTokens,
      // A chained call's context is not text here: only a fresh prompt is cached.
      ...(contextTokens === 0 ? { prompt } : {}),
      completionTokens: sized.completionTokens,
      truncated: sized.truncated,
      maxTokens: maxTokens.value,
      instructions: typeof instructions === 'string' ? instructions : null,
      previousResponseId: typeof previous === 'string' ? previous : null,
      store: body['store'] !== false,
      textConfig: { format: { type: 'text' }, verbosity: 'medium', ...textConfig },
      echo,
    },
  };
}

/** Ids of one answer: the response and its single output message. */
interface ResponseIds {
  id: string;
  messageId: string;
  createdAt: number;
}

type Status = 'in_progress' | 'completed' | 'incomplete';

function outputText(text: string): Record<string, unknown> {
  return { type: 'output_text', annotations: [], logprobs: [], text };
}

function messageItem(
  ids: ResponseIds,
  status: Status,
  content: Record<string, unknown>[],
): Record<string, unknown> {
  return { id: ids.messageId, type: 'message', status, content, role: 'assistant' };
}

function responseObject(
  plan: ResponsesPlan,
  ids: ResponseIds,
  status: Status,
  output: Record<string, unknown>[],
): Record<string, unknown> {
  const done = status !== 'in_progress';
  return {
    id: ids.id,
    object: 'response',
    created_at: ids.createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: plan.instructions,
    max_output_tokens: plan.maxTokens ?? null,
    max_tool_calls: null,
    model: plan.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: plan.previousResponseId,
    reasoning: { effort: null, summary: null },
    service_tier: 'default',
    store: plan.store,
    temperature: 1,
    text: plan.textConfig,
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    usage: done
      ? {
          input_tokens: plan.promptTokens,
          input_tokens_details: { cached_tokens: plan.cacheReadTokens ?? 0 },
          output_tokens: plan.completionTokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: plan.promptTokens + plan.completionTokens,
        }
      : null,
    user: null,
    metadata: {},
    ...plan.echo,
  };
}

/** The `Response` body of a non-streaming answer (also what the deployment stores). */
export function responseBody(plan: ResponsesPlan, ids: ResponseIds): Record<string, unknown> {
  const status: Status = plan.truncated ? 'incomplete' : 'completed';
  return responseObject(plan, ids, status, [messageItem(ids, status, [outputText(plan.text)])]);
}

/**
 * The SSE events of `stream: true`, in the order the service sends them (each with `event:`
 * and a rising `sequence_number`): `response.created`, `response.in_progress`,
 * `response.output_item.added`, `response.content_part.added`, one `response.output_text.delta`
 * per delta, `response.output_text.done`, `response.content_part.done`,
 * `response.output_item.done`, then `response.completed` (or `response.incomplete` when cut at
 * `max_output_tokens`) with the full response and its usage. No `[DONE]` line follows.
 */
export function responseFrames(plan: ResponsesPlan, ids: ResponseIds): string[] {
  let sequence = 0;
  const frames: string[] = [];
  const push = (type: string, data: Record<string, unknown>): void => {
    frames.push(typedEvent(type, { ...data, sequence_number: sequence++ }));
  };
  const started = responseObject(plan, ids, 'in_progress', []);
  push('response.created', { response: started });
  push('response.in_progress', { response: started });
  const at = { item_id: ids.messageId, output_index: 0 };
  push('response.output_item.added', {
    output_index: 0,
    item: messageItem(ids, 'in_progress', []),
  });
  push('response.content_part.added', { ...at, content_index: 0, part: outputText('') });
  for (const delta of splitDeltas(plan.text)) {
    push('response.output_text.delta', { ...at, content_index: 0, delta, logprobs: [] });
  }
  push('response.output_text.done', { ...at, content_index: 0, text: plan.text, logprobs: [] });
  push('response.content_part.done', { ...at, content_index: 0, part: outputText(plan.text) });
  const final = responseBody(plan, ids);
  const item = (final['output'] as Record<string, unknown>[])[0];
  push('response.output_item.done', { output_index: 0, item });
  push(plan.truncated ? 'response.incomplete' : 'response.completed', { response: final });
  return frames;
}

/** An event whose `data:` JSON is cut short, for the `malformed` fault. */
export function malformedResponseFrame(): string {
  return 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":\n\n';
}

/** The body of `DELETE responses/{id}`. */
export function deletedResponseBody(id: string): Record<string, unknown> {
  return { id, object: 'response.deleted', deleted: true };
}

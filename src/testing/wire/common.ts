/**
 * Pieces shared by the wire formats of the simulated deployments: token estimates, text
 * extraction, SSE framing and the plan of one simulated answer.
 */

/**
 * The simulator's token estimate: one token per four UTF-16 code units, rounded up.
 *
 * @example
 * ```ts
 * estimateTokens('Hello, world'); // => 3
 * ```
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** One tool call a simulated answer makes (internal; see `tool-calls.ts`). */
export interface SimulatedToolCall {
  name: string;
  /** The arguments, as the JSON text both APIs stream. */
  arguments: string;
}

/** The APIs whose requests count against a deployment's quotas. */
type QuotaApi = 'chat' | 'messages' | 'responses' | 'embeddings';

/** What a simulated deployment will answer to one valid request (internal). */
export interface CompletionPlan {
  api: QuotaApi;
  model: string;
  stream: boolean;
  /** OpenAI `stream_options.include_usage`. */
  includeUsage: boolean;
  /** The assistant's answer (already truncated to `maxTokens`). */
  text: string;
  promptTokens: number;
  completionTokens: number;
  /** The answer was cut at `maxTokens` (`finish_reason: 'length'`, `stop_reason: 'max_tokens'`). */
  truncated: boolean;
  /** `max_tokens` / `max_completion_tokens` / `max_output_tokens` of the request, if any. */
  maxTokens: number | undefined;
  /** OpenAI automatic prompt caching: the prompt's text in order (instructions, then messages). */
  prompt?: string;
  /** Anthropic prompt caching: the cacheable prefix (by `cache_control` marks), if any. */
  cachePrefix?: { key: string; tokens: number };
  /** Prompt tokens read from the deployment's prompt cache (set at admission). */
  cacheReadTokens?: number;
  /** Prompt tokens written to the deployment's prompt cache (set at admission). */
  cacheCreationTokens?: number;
  /** The function tools the answer calls instead of answering in text (see `tool-calls.ts`). */
  toolCalls?: SimulatedToolCall[];
}

/** A request body the simulator rejects with 400 (internal). */
export interface InvalidRequest {
  /** HTTP status of the answer (default 400). */
  status?: number;
  message: string;
  param?: string;
  code?: string;
}

/** Result of reading a request body (internal). */
export type PlanResult<P extends CompletionPlan = CompletionPlan> =
  { ok: true; plan: P } | ({ ok: false } & InvalidRequest);

/** A plain JSON object (not null, not an array). */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The 400 OpenAI answers when the optional field `field` holds `value` (present, not null) of
 * another type than `type`; undefined when it is absent or of that type.
 *
 * @example
 * ```ts
 * typeProblem('stream', 'yes', 'boolean');
 * // { ok: false, message: "Invalid type for 'stream': expected a boolean.", param: 'stream' }
 * ```
 */
export function typeProblem(
  field: string,
  value: unknown,
  type: 'boolean' | 'string',
): ({ ok: false } & InvalidRequest) | undefined {
  if (value === undefined || value === null || typeof value === type) return undefined;
  return { ok: false, message: `Invalid type for '${field}': expected a ${type}.`, param: field };
}

/**
 * An OpenAI request body and its `model`, or the 400 OpenAI answers a body that is no JSON object,
 * or one without a model, with: `noModel` is that API's own words for the missing model.
 *
 * @example
 * ```ts
 * const read = readModelBody(body, 'you must provide a model parameter');
 * if (!read.ok) return read;
 * read.model; // 'gpt-4o'
 * ```
 */
export function readModelBody(
  body: unknown,
  noModel: string,
): { ok: true; body: Record<string, unknown>; model: string } | ({ ok: false } & InvalidRequest) {
  if (!isRecord(body)) {
    return { ok: false, message: 'We could not parse the JSON body of your request.' };
  }
  const model = body['model'];
  if (typeof model !== 'string' || model === '') {
    return { ok: false, message: noModel, param: 'model', code: 'missing_required_parameter' };
  }
  return { ok: true, body, model };
}

/**
 * Text of a message `content`: a string, or the `text` of the parts of an array (text parts, and
 * the nested content of Anthropic `tool_result` blocks), concatenated without separator.
 */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content) {
    if (typeof part === 'string') text += part;
    else if (isRecord(part)) {
      if (typeof part['text'] === 'string') text += part['text'];
      else if (typeof part['refusal'] === 'string') text += part['refusal'];
      else if (part['type'] === 'tool_result') text += contentText(part['content']);
    }
  }
  return text;
}

/** Text of the top-level text parts only: what the simulator echoes. */
export function echoText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) =>
      isRecord(part) && part['type'] === 'text' && typeof part['text'] === 'string'
        ? part['text']
        : '',
    )
    .join('');
}

/** The integer `max_tokens`-like field `key` of `body`: missing, valid, or an error message. */
export function readMaxTokens(
  body: Record<string, unknown>,
  key: string,
): { value: number | undefined } | { error: string } {
  const raw = body[key];
  if (raw === undefined || raw === null) return { value: undefined };
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 1) {
    return { error: `${key}: must be an integer greater than or equal to 1` };
  }
  return { value: raw };
}

/**
 * Completion size and truncation: `fixedCompletionTokens` (the deployment's `completionTokens`)
 * or the estimate of `text` (at least 1); above `maxTokens` the answer is cut to
 * `maxTokens * 4` characters and reported as truncated.
 */
export function sizeCompletion(
  text: string,
  maxTokens: number | undefined,
  fixedCompletionTokens: number | undefined,
): { text: string; completionTokens: number; truncated: boolean } {
  let completionTokens = fixedCompletionTokens ?? Math.max(1, estimateTokens(text));
  if (maxTokens !== undefined && completionTokens > maxTokens) {
    completionTokens = maxTokens;
    return { text: text.slice(0, maxTokens * 4), completionTokens, truncated: true };
  }
  return { text, completionTokens, truncated: false };
}

/**
 * Splits an answer into stream deltas: one per word (with its trailing whitespace), so that a
 * multi-word answer arrives in several events.
 */
export function splitDeltas(text: string): string[] {
  return text.match(/\s*\S+\s*|\s+/g) ?? [];
}

/** One SSE frame with only a `data:` line (OpenAI Chat Completions). */
export const dataFrame = (data: unknown): string => `data: ${JSON.stringify(data)}\n\n`;

/** One SSE frame with an `event:` line and `{ type, ...data }` as data (Messages, Responses). */
export const typedEvent = (type: string, data: Record<string, unknown>): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

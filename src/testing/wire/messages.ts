/**
 * Anthropic Messages wire format (also what Azure AI Foundry serves under `/anthropic/`) of the
 * simulated deployments: request validation, `Message` bodies, SSE events and token counts.
 */
import { sampleJsonSchema } from './json-schema-sample';
import {
  contentText,
  echoText,
  isRecord,
  readMaxTokens,
  splitDeltas,
  typedEvent,
  type CompletionPlan,
  type InvalidRequest,
  type PlanResult,
} from './common';
import { refuseMessagesBody } from './strict-messages';
import { argumentDeltas, messagesToolCalls, sizeAnswer } from './tool-calls';

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

/** The prompt of a Messages or count_tokens request: its size and what the answer echoes. */
interface MessagesPrompt {
  model: string;
  messages: unknown[];
  promptChars: number;
  lastUser: unknown;
  /** The prompt up to the last block marked `cache_control`, if any block is. */
  cachePrefix: string | undefined;
}

/** Text of a `system` / message `content` value, block by block, with cache marks. */
function blocksOf(content: unknown): { text: string; cached: boolean }[] {
  if (typeof content === 'string') return [{ text: content, cached: false }];
  if (!Array.isArray(content)) return [];
  return content.map((block) => ({
    text: contentText([block]),
    cached: isRecord(block) && isRecord(block['cache_control']),
  }));
}

function readMessagesPrompt(
  body: unknown,
): ({ ok: true } & MessagesPrompt) | ({ ok: false } & InvalidRequest) {
  if (!isRecord(body)) return { ok: false, message: 'Request body must be a JSON object' };
  const model = body['model'];
  if (typeof model !== 'string' || model === '') {
    return { ok: false, message: 'model: Field required', param: 'model' };
  }
  const messages = body['messages'];
  if (!Array.isArray(messages)) {
    return { ok: false, message: 'messages: Field required', param: 'messages' };
  }
  if (messages.length === 0) {
    return { ok: false, message: 'messages: at least one message is required', param: 'messages' };
  }
  // Anthropic caches a prefix in the order tools, system, messages: everything up to and
  // including the last block that carries `cache_control`.
  let prompt = '';
  let cachePrefix: string | undefined;
  const take = (content: unknown): void => {
    for (const block of blocksOf(content)) {
      prompt += block.text;
      if (block.cached) cachePrefix = prompt;
    }
  };
  take(body['system']);
  let lastUser: unknown = undefined;
  for (const [i, message] of messages.entries()) {
    if (!isRecord(message) || typeof message['role'] !== 'string') {
      return { ok: false, message: `messages.${i}.role: Field required`, param: 'messages' };
    }
    take(message['content']);
    if (message['role'] === 'user') lastUser = message['content'];
  }
  return { ok: true, model, messages, promptChars: prompt.length, lastUser, cachePrefix };
}

const tokensOf = (chars: number): number => Math.max(1, Math.ceil(chars / 4));

/**
 * Reads a `POST v1/messages` body into a completion plan, or the reason for a 400.
 * The answer echoes the text of the last `user` message; with a `json_schema` output format it
 * is a JSON sample of the schema.
 */
export function readMessagesRequest(body: unknown, fixedCompletionTokens?: number): PlanResult {
  if (isRecord(body) && (body['max_tokens'] === undefined || body['max_tokens'] === null)) {
    return { ok: false, message: 'max_tokens: Field required', param: 'max_tokens' };
  }
  const prompt = readMessagesPrompt(body);
  if (!prompt.ok) return prompt;
  const request = body as Record<string, unknown>;
  const maxTokens = readMaxTokens(request, 'max_tokens');
  if ('error' in maxTokens) return { ok: false, message: maxTokens.error, param: 'max_tokens' };
  const stream = request['stream'];
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') {
    return { ok: false, message: 'stream: Input should be a valid boolean', param: 'stream' };
  }

  const refused = refuseMessagesBody(request);
  if (refused !== undefined) return { ok: false, ...refused };

  const toolCalls = messagesToolCalls(request);
  const format = outputFormat(request);
  // After a tool result the answer speaks of it: the result's text, when the turn has no other.
  const answer =
    format?.['type'] === 'json_schema'
      ? JSON.stringify(format['schema'] === undefined ? {} : sampleJsonSchema(format['schema']))
      : echoText(prompt.lastUser) || contentText(prompt.lastUser);
  const sized = sizeAnswer(toolCalls, answer, maxTokens.value, fixedCompletionTokens);
  const promptTokens = tokensOf(prompt.promptChars);
  const plan: CompletionPlan = {
    api: 'messages',
    model: prompt.model,
    stream: stream === true,
    includeUsage: false,
    text: sized.text,
    promptTokens,
    completionTokens: sized.completionTokens,
    truncated: sized.truncated,
    maxTokens: maxTokens.value,
    ...(toolCalls ? { toolCalls } : {}),
    ...(prompt.cachePrefix !== undefined
      ? {
          cachePrefix: {
            key: `${prompt.model}\u0000${prompt.cachePrefix}`,
            tokens: Math.min(promptTokens, tokensOf(prompt.cachePrefix.length)),
          },
        }
      : {}),
  };
  return { ok: true, plan };
}

/**
 * Reads a `POST v1/messages/count_tokens` body: the prompt's `input_tokens` (the same estimate
 * a Messages request is charged), or the reason for a 400.
 */
export function readCountTokensRequest(
  body: unknown,
): { ok: true; model: string; inputTokens: number } | ({ ok: false } & InvalidRequest) {
  const prompt = readMessagesPrompt(body);
  if (!prompt.ok) return prompt;
  return { ok: true, model: prompt.model, inputTokens: tokensOf(prompt.promptChars) };
}

function usageOf(plan: CompletionPlan, outputTokens: number): Record<string, unknown> {
  const read = plan.cacheReadTokens ?? 0;
  const created = plan.cacheCreationTokens ?? 0;
  return {
    input_tokens: Math.max(0, plan.promptTokens - read - created),
    cache_creation_input_tokens: created,
    cache_read_input_tokens: read,
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
    content: plan.toolCalls
      ? plan.toolCalls.map((c, i) => ({
          type: 'tool_use',
          id: toolUseId(id, i),
          name: c.name,
          input: JSON.parse(c.arguments) as unknown,
        }))
      : [{ type: 'text', text: plan.text }],
    stop_reason: stopOf(plan),
    stop_sequence: null,
    usage: usageOf(plan, plan.completionTokens),
  };
}

const event = typedEvent;

const stopOf = (plan: CompletionPlan): string =>
  plan.toolCalls ? 'tool_use' : plan.truncated ? 'max_tokens' : 'end_turn';

/** A tool_use block's id: the answer's, numbered (`toolu_<answer>_<i>`). */
const toolUseId = (id: string, i: number): string => `toolu_${id.replace(/^msg_/, '')}_${i}`;

function textEvents(plan: CompletionPlan): string[] {
  const frames = [
    event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  ];
  for (const text of splitDeltas(plan.text)) {
    frames.push(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }));
  }
  frames.push(event('content_block_stop', { index: 0 }));
  return frames;
}

/** Each tool_use block: its start (empty input), its input in `input_json_delta` pieces, its stop. */
function toolUseEvents(plan: CompletionPlan, id: string): string[] {
  const frames: string[] = [];
  for (const [index, call] of (plan.toolCalls ?? []).entries()) {
    frames.push(
      event('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: toolUseId(id, index), name: call.name, input: {} },
      }),
    );
    for (const partial_json of argumentDeltas(call.arguments)) {
      frames.push(
        event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } }),
      );
    }
    frames.push(event('content_block_stop', { index }));
  }
  return frames;
}

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
        usage: usageOf(plan, 1),
      },
    }),
  ];
  const blocks = plan.toolCalls ? toolUseEvents(plan, id) : textEvents(plan);
  // The API pings right after the first block opens.
  frames.push(blocks[0]!, event('ping', {}), ...blocks.slice(1));
  frames.push(
    event('message_delta', {
      delta: { stop_reason: stopOf(plan), stop_sequence: null },
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

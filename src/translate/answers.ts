import type { Message, StopReason, Usage } from '@anthropic-ai/sdk/resources/messages';
import type {
  ChatCompletion,
  ChatCompletionMessageFunctionToolCall,
} from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';

/** A Chat Completions `finish_reason`. */
export type FinishReason = ChatCompletion.Choice['finish_reason'];

/**
 * Claude's stop reason as a Chat Completions finish reason.
 *
 * @example
 * ```ts
 * finishReasonOf('tool_use'); // => 'tool_calls'
 * ```
 */
export function finishReasonOf(stop: StopReason | null): FinishReason {
  switch (stop) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      return 'stop';
  }
}

/**
 * A Chat Completions finish reason as Claude's stop reason.
 *
 * @example
 * ```ts
 * stopReasonOf('length'); // => 'max_tokens'
 * ```
 */
export function stopReasonOf(finish: FinishReason | null): StopReason {
  switch (finish) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

/**
 * Claude's usage as Chat Completions usage: the prompt counts every input token (cache reads and
 * writes included), `cached_tokens` the cache reads.
 *
 * @example
 * ```ts
 * chatUsageOf({ input_tokens: 10, cache_read_input_tokens: 90, output_tokens: 5 });
 * // { prompt_tokens: 100, completion_tokens: 5, total_tokens: 105, prompt_tokens_details: { cached_tokens: 90 } }
 * ```
 */
export function chatUsageOf(
  usage: Pick<Usage, 'input_tokens' | 'output_tokens'> &
    Partial<Pick<Usage, 'cache_read_input_tokens' | 'cache_creation_input_tokens'>>,
): CompletionUsage {
  const read = usage.cache_read_input_tokens ?? 0;
  const prompt = usage.input_tokens + read + (usage.cache_creation_input_tokens ?? 0);
  return {
    prompt_tokens: prompt,
    completion_tokens: usage.output_tokens,
    total_tokens: prompt + usage.output_tokens,
    prompt_tokens_details: { cached_tokens: read },
  };
}

/**
 * Chat Completions usage as Claude's: uncached input, cache reads, output.
 *
 * @example
 * ```ts
 * messageUsageOf({ prompt_tokens: 100, completion_tokens: 5, total_tokens: 105,
 *   prompt_tokens_details: { cached_tokens: 90 } }).input_tokens; // => 10
 * ```
 */
export function messageUsageOf(usage: CompletionUsage | undefined | null): Usage {
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    input_tokens: Math.max(0, (usage?.prompt_tokens ?? 0) - cached),
    output_tokens: usage?.completion_tokens ?? 0,
    cache_read_input_tokens: cached,
    cache_creation_input_tokens: 0,
    cache_creation: null,
    inference_geo: null,
    output_tokens_details: null,
    server_tool_use: null,
    service_tier: null,
    speed: null,
  };
}

/**
 * Claude's answer as a `ChatCompletion`, `model` naming the model that answered: text blocks
 * become the content, `tool_use` blocks tool calls (their input as JSON arguments).
 *
 * @example
 * ```ts
 * const completion = messageToChatCompletion(message, 'claude-sonnet-5', 1_765_000_000);
 * completion.choices[0].finish_reason; // 'stop' for 'end_turn'
 * ```
 */
export function messageToChatCompletion(
  message: Message,
  model: string,
  created: number,
): ChatCompletion {
  const text: string[] = [];
  const calls: ChatCompletionMessageFunctionToolCall[] = [];
  for (const block of message.content) {
    if (block.type === 'text') text.push(block.text);
    else if (block.type === 'tool_use') {
      calls.push({
        id: block.id,
        type: 'function',
        function: { name: block.name, arguments: JSON.stringify(block.input) },
      });
    }
  }
  const refused = message.stop_reason === 'refusal';
  const content = text.length > 0 ? text.join('') : null;
  const answer: ChatCompletion.Choice['message'] = {
    role: 'assistant',
    content: refused ? null : content,
    refusal: refused ? (content ?? '') : null,
    annotations: [],
  };
  if (calls.length > 0) answer.tool_calls = calls;
  return {
    id: message.id,
    object: 'chat.completion',
    created,
    model,
    choices: [
      {
        index: 0,
        message: answer,
        logprobs: null,
        finish_reason: finishReasonOf(message.stop_reason),
      },
    ],
    usage: chatUsageOf(message.usage),
  };
}

/**
 * A `ChatCompletion` as Claude's `Message`, `model` naming the model that answered: the content
 * a text block, tool calls `tool_use` blocks (their arguments parsed), a refusal a text block
 * with `stop_reason: 'refusal'`.
 *
 * @example
 * ```ts
 * chatCompletionToMessage(completion, 'gpt-4o').stop_reason; // 'end_turn' for 'stop'
 * ```
 */
export function chatCompletionToMessage(completion: ChatCompletion, model: string): Message {
  const choice = completion.choices[0];
  const content: Message['content'] = [];
  const said = choice?.message.content ?? choice?.message.refusal ?? null;
  if (said !== null && said !== '') content.push({ type: 'text', text: said, citations: null });
  for (const call of choice?.message.tool_calls ?? []) {
    if (call.type !== 'function') continue;
    content.push({
      type: 'tool_use',
      id: call.id,
      name: call.function.name,
      input: parseArguments(call.function.arguments),
      caller: { type: 'direct' },
    } as Message['content'][number]);
  }
  const refused = choice?.message.refusal !== null && choice?.message.refusal !== undefined;
  return {
    id: completion.id,
    type: 'message',
    role: 'assistant',
    model,
    content,
    container: null,
    diagnostics: null,
    stop_details: null,
    stop_reason: refused ? 'refusal' : stopReasonOf(choice?.finish_reason ?? null),
    stop_sequence: null,
    usage: messageUsageOf(completion.usage),
  };
}

/** A model's tool arguments as an object; text that is not a JSON object is kept whole. */
function parseArguments(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text === '' ? '{}' : text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      return value as Record<string, unknown>;
    }
  } catch {
    // Below: the model wrote something other than an object.
  }
  return { arguments: text };
}

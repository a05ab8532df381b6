import type { RawMessageStreamEvent, StopReason } from '@anthropic-ai/sdk/resources/messages';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import {
  chatUsageOf,
  finishReasonOf,
  messageUsageOf,
  stopReasonOf,
  type FinishReason,
} from './answers';

/**
 * Claude's stream events as Chat Completions chunks, in the order OpenAI sends them: the role,
 * text deltas as content, each `tool_use` block as a tool call (id and name first, then its
 * `input_json_delta` pieces as argument deltas, numbered by call), the finish reason, and with
 * `includeUsage` a last chunk with `choices: []` and the usage.
 *
 * @example
 * ```ts
 * for await (const chunk of messageEventsToChunks(events, { model: 'claude-sonnet-5', created, includeUsage: true })) {
 *   process.stdout.write(chunk.choices[0]?.delta.content ?? '');
 * }
 * ```
 */
export async function* messageEventsToChunks(
  events: AsyncIterable<RawMessageStreamEvent>,
  how: { model: string; created: number; includeUsage: boolean },
): AsyncGenerator<ChatCompletionChunk> {
  let id = '';
  let input = { input_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
  let output = 0;
  let stop: StopReason | null = null;
  // Block index -> tool call index: text blocks take no tool call number.
  const calls = new Map<number, number>();
  const chunk = (
    delta: ChatCompletionChunk.Choice.Delta,
    finish: FinishReason | null = null,
  ): ChatCompletionChunk => ({
    id,
    object: 'chat.completion.chunk',
    created: how.created,
    model: how.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(how.includeUsage ? { usage: null } : {}),
  });
  for await (const event of events) {
    switch (event.type) {
      case 'message_start': {
        id = event.message.id;
        const u = event.message.usage;
        input = {
          input_tokens: u.input_tokens,
          cache_read_input_tokens: u.cache_read_input_tokens ?? 0,
          cache_creation_input_tokens: u.cache_creation_input_tokens ?? 0,
        };
        output = u.output_tokens;
        yield chunk({ role: 'assistant', content: '', refusal: null });
        break;
      }
      case 'content_block_start': {
        const block = event.content_block;
        if (block.type === 'text' && block.text !== '') yield chunk({ content: block.text });
        if (block.type !== 'tool_use') break;
        const n = calls.size;
        calls.set(event.index, n);
        yield chunk({
          tool_calls: [
            {
              index: n,
              id: block.id,
              type: 'function',
              function: { name: block.name, arguments: '' },
            },
          ],
        });
        break;
      }
      case 'content_block_delta': {
        const delta = event.delta;
        if (delta.type === 'text_delta') yield chunk({ content: delta.text });
        else if (delta.type === 'input_json_delta' && calls.has(event.index)) {
          yield chunk({
            tool_calls: [
              { index: calls.get(event.index)!, function: { arguments: delta.partial_json } },
            ],
          });
        }
        break;
      }
      case 'message_delta': {
        stop = event.delta.stop_reason ?? stop;
        const u = event.usage;
        output = u.output_tokens;
        if (u.input_tokens !== null && u.input_tokens !== undefined)
          input.input_tokens = u.input_tokens;
        if (u.cache_read_input_tokens != null)
          input.cache_read_input_tokens = u.cache_read_input_tokens;
        if (u.cache_creation_input_tokens != null) {
          input.cache_creation_input_tokens = u.cache_creation_input_tokens;
        }
        break;
      }
      case 'message_stop': {
        yield chunk({}, finishReasonOf(stop));
        if (how.includeUsage) {
          const usage: CompletionUsage = chatUsageOf({ ...input, output_tokens: output });
          yield { ...chunk({}), choices: [], usage };
        }
        break;
      }
      default:
        break;
    }
  }
}

/**
 * Chat Completions chunks as Claude's stream events, in the order Anthropic sends them:
 * `message_start`, each content block (text, or a tool call as `tool_use` with its arguments as
 * `input_json_delta`) opened, filled and stopped, then `message_delta` with the stop reason and
 * the usage (read from the usage chunk the request asked for), and `message_stop`.
 *
 * @example
 * ```ts
 * const message = await MessageStream.fromReadableStream(...); // or: for await (const e of chunksToMessageEvents(chunks, { model: 'gpt-4o' }))
 * ```
 */
export async function* chunksToMessageEvents(
  chunks: AsyncIterable<ChatCompletionChunk>,
  how: { model: string },
): AsyncGenerator<RawMessageStreamEvent> {
  let started = false;
  let index = -1;
  let open: 'text' | 'tool' | undefined;
  const toolBlocks = new Map<number, number>();
  let finish: FinishReason | null = null;
  let usage: CompletionUsage | undefined;
  const close = function* (): Generator<RawMessageStreamEvent> {
    if (open !== undefined) yield { type: 'content_block_stop', index };
    open = undefined;
  };
  for await (const chunk of chunks) {
    if (!started) {
      started = true;
      const empty = messageUsageOf(undefined);
      yield {
        type: 'message_start',
        message: {
          id: chunk.id,
          type: 'message',
          role: 'assistant',
          model: how.model,
          content: [],
          container: null,
          diagnostics: null,
          stop_details: null,
          stop_reason: null,
          stop_sequence: null,
          usage: empty,
        },
      };
    }
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (choice === undefined) continue;
    const delta = choice.delta;
    const text = delta.content ?? delta.refusal;
    if (text !== undefined && text !== null && text !== '') {
      if (open !== 'text') {
        yield* close();
        index++;
        open = 'text';
        yield {
          type: 'content_block_start',
          index,
          content_block: { type: 'text', text: '', citations: null },
        };
      }
      yield { type: 'content_block_delta', index, delta: { type: 'text_delta', text } };
    }
    for (const call of delta.tool_calls ?? []) {
      if (call.id !== undefined && !toolBlocks.has(call.index)) {
        yield* close();
        index++;
        open = 'tool';
        toolBlocks.set(call.index, index);
        yield {
          type: 'content_block_start',
          index,
          content_block: {
            type: 'tool_use',
            id: call.id,
            name: call.function?.name ?? '',
            input: {},
            caller: { type: 'direct' },
          },
        } as RawMessageStreamEvent;
      }
      const args = call.function?.arguments;
      const at = toolBlocks.get(call.index);
      if (args !== undefined && args !== '' && at !== undefined) {
        yield {
          type: 'content_block_delta',
          index: at,
          delta: { type: 'input_json_delta', partial_json: args },
        };
      }
    }
    if (choice.finish_reason !== null && choice.finish_reason !== undefined)
      finish = choice.finish_reason;
  }
  if (!started) return;
  yield* close();
  const u = messageUsageOf(usage);
  yield {
    type: 'message_delta',
    delta: {
      stop_reason: stopReasonOf(finish),
      stop_sequence: null,
      container: null,
      stop_details: null,
    },
    usage: {
      input_tokens: u.input_tokens,
      output_tokens: u.output_tokens,
      cache_read_input_tokens: u.cache_read_input_tokens,
      cache_creation_input_tokens: u.cache_creation_input_tokens,
      output_tokens_details: null,
      server_tool_use: null,
    },
  } as RawMessageStreamEvent;
  yield { type: 'message_stop' };
}

import type { OpenAI } from 'openai';
import type { APIPromise } from 'openai/core/api-promise';
import type { Stream } from 'openai/core/streaming';
import type { RunnerOptions } from 'openai/lib/AbstractChatCompletionRunner';
import {
  ChatCompletionRunner,
  type ChatCompletionToolRunnerParams,
} from 'openai/lib/ChatCompletionRunner';
import {
  ChatCompletionStream,
  type ChatCompletionStreamParams,
} from 'openai/lib/ChatCompletionStream';
import {
  ChatCompletionStreamingRunner,
  type ChatCompletionStreamingToolRunnerParams,
} from 'openai/lib/ChatCompletionStreamingRunner';
import type { ExtractParsedContentFromParams } from 'openai/lib/parser';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsBase,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionParseParams,
  ParsedChatCompletion,
} from 'openai/resources/chat/completions';
import type { TokenUsage as Usage } from '../../quota/admission';
import type { SessionParams } from '../../types';
import { defineAdapter, type Surface } from '../adapter';
import { SurfaceFacade } from '../surface-facade';
import { admissionRecord } from '../admission-record';
import { openaiImageTokens, schemaLength } from '../media-tokens';
import { outputCap, textLength } from '../text-length';
import type { OpenAIRequestOptions } from './openai-deployment';

/** `sb.chat.completions`: the `openai` client's `chat.completions`, balanced. */
export interface SwitchboardChatCompletions {
  create(
    body: ChatCompletionCreateParamsNonStreaming & SessionParams,
    options?: OpenAIRequestOptions,
  ): APIPromise<ChatCompletion>;
  create(
    body: ChatCompletionCreateParamsStreaming & SessionParams,
    options?: OpenAIRequestOptions,
  ): APIPromise<Stream<ChatCompletionChunk>>;
  create(
    body: ChatCompletionCreateParamsBase & SessionParams,
    options?: OpenAIRequestOptions,
  ): APIPromise<Stream<ChatCompletionChunk> | ChatCompletion>;
  parse<Params extends ChatCompletionParseParams, ParsedT = ExtractParsedContentFromParams<Params>>(
    body: Params & SessionParams,
    options?: OpenAIRequestOptions,
  ): APIPromise<ParsedChatCompletion<ParsedT>>;
  /** The SDK's `ChatCompletionStream` over a balanced streaming call. */
  stream<
    Params extends ChatCompletionStreamParams,
    ParsedT = ExtractParsedContentFromParams<Params>,
  >(
    body: Params & SessionParams,
    options?: OpenAIRequestOptions,
  ): ChatCompletionStream<ParsedT>;
  /** The SDK's tool runner; every turn is a balanced call (the same session keeps one deployment). */
  runTools<
    Params extends ChatCompletionToolRunnerParams<never>,
    ParsedT = ExtractParsedContentFromParams<Params>,
  >(
    body: Params & SessionParams,
    options?: RunnerOptions,
  ): ChatCompletionRunner<ParsedT>;
  runTools<
    Params extends ChatCompletionStreamingToolRunnerParams<never>,
    ParsedT = ExtractParsedContentFromParams<Params>,
  >(
    body: Params & SessionParams,
    options?: RunnerOptions,
  ): ChatCompletionStreamingRunner<ParsedT>;
}

interface ChatUsage {
  usage?: {
    prompt_tokens?: number;
    completion_tokens?: number;
    prompt_tokens_details?: { cached_tokens?: number } | null;
  } | null;
}

function usageOf(value: unknown): Usage | undefined {
  const usage = (value as ChatUsage).usage;
  if (!usage) return undefined;
  const cached = usage.prompt_tokens_details?.cached_tokens;
  const input = usage.prompt_tokens ?? 0;
  const output = usage.completion_tokens ?? 0;
  return cached ? { input, output, cacheRead: cached } : { input, output };
}

/**
 * Chat Completions (`POST /chat/completions`) on OpenAI and Azure OpenAI deployments.
 *
 * @example
 * ```ts
 * await sb.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] });
 * ```
 */
export const chatCompletions = defineAdapter<SwitchboardChatCompletions, OpenAI>()({
  name: 'chat.completions',
  path: ['chat', 'completions'],
  provider: 'openai',
  operations: {
    create: {
      send: (client, body, options) =>
        client.chat.completions.create(body as never, options as never),
    },
    parse: {
      send: (client, body, options) =>
        client.chat.completions.parse(body as never, options as never),
    },
  },
  admission(body, defaultOutput) {
    const n = typeof body.n === 'number' && body.n > 1 ? body.n : 1;
    const output = (outputCap(body) ?? defaultOutput) * n;
    const input =
      Math.ceil((textLength(body.messages) + schemaLength(body)) / 4) +
      openaiImageTokens(body.messages, body.model);
    // No cap: each choice is charged the deployment's own reservation (`outputReservation`).
    return admissionRecord(input, output, output > 0 ? undefined : n);
  },
  usage: usageOf,
  streamUsage: (event) => usageOf(event),
  prepareStream(body, force) {
    const streamOptions = body.stream_options as { include_usage?: boolean } | null | undefined;
    const asked = streamOptions?.include_usage;
    if (asked === true || (asked !== undefined && force !== true)) {
      return { body, hideUsageEvents: false };
    }
    return {
      body: { ...body, stream_options: { ...streamOptions, include_usage: true } },
      hideUsageEvents: true,
    };
  },
  isUsageEvent(event) {
    const chunk = event as { choices?: unknown[]; usage?: unknown };
    return chunk.usage != null && Array.isArray(chunk.choices) && chunk.choices.length === 0;
  },
  facade: (surface) => new ChatFacade(surface) as unknown as SwitchboardChatCompletions,
});

/** `sb.chat.completions`: `create` and `parse` as every surface's, and the SDK's helpers. */
class ChatFacade extends SurfaceFacade {
  /**
   * The SDK's helpers call `client.chat.completions.create()`: given this facade as that, every
   * request they make is balanced and accounted.
   */
  private readonly client: OpenAI;

  constructor(surface: Surface) {
    super(surface);
    this.client = { chat: { completions: this } } as unknown as OpenAI;
  }

  stream(body: ChatCompletionStreamParams, options?: OpenAIRequestOptions): unknown {
    return ChatCompletionStream.createChatCompletion(this.client, body, options);
  }

  runTools(body: { stream?: boolean | null }, options?: RunnerOptions): unknown {
    return body.stream
      ? ChatCompletionStreamingRunner.runTools(this.client, body as never, options)
      : ChatCompletionRunner.runTools(this.client, body as never, options);
  }
}

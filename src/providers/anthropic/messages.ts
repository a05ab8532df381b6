import type { Anthropic } from '@anthropic-ai/sdk';
import type { APIPromise } from '@anthropic-ai/sdk/core/api-promise';
import type { Stream } from '@anthropic-ai/sdk/core/streaming';
import { MessageStream } from '@anthropic-ai/sdk/lib/MessageStream';
import type { MessageStreamParams } from '@anthropic-ai/sdk/resources/messages/messages';
import {
  parseMessage,
  type ExtractParsedContentFromParams,
  type ParsedMessage,
} from '@anthropic-ai/sdk/lib/parser';
import type {
  Message,
  MessageCountTokensParams,
  MessageCreateParamsBase,
  MessageCreateParamsNonStreaming,
  MessageCreateParamsStreaming,
  MessageTokensCount,
  RawMessageStreamEvent,
} from '@anthropic-ai/sdk/resources/messages';
import type { TokenUsage as Usage } from '../../quota/admission';
import type { SessionParams } from '../../types';
import { defineAdapter } from '../adapter';
import { SurfaceFacade } from '../surface-facade';
import { admissionRecord } from '../admission-record';
import { claudeImageTokens, schemaLength, TOOL_USE_PROMPT } from '../media-tokens';
import { contentLength, textLength, tokenField } from '../text-length';
import type { AnthropicRequestOptions } from './anthropic-deployment';
import { cachePrefixOf } from './cache-prefix';

/** `sb.messages`: the `@anthropic-ai/sdk` client's `messages`, balanced. */
export interface SwitchboardMessages {
  create(
    body: MessageCreateParamsNonStreaming & SessionParams,
    options?: AnthropicRequestOptions,
  ): APIPromise<Message>;
  create(
    body: MessageCreateParamsStreaming & SessionParams,
    options?: AnthropicRequestOptions,
  ): APIPromise<Stream<RawMessageStreamEvent>>;
  create(
    body: MessageCreateParamsBase & SessionParams,
    options?: AnthropicRequestOptions,
  ): APIPromise<Stream<RawMessageStreamEvent> | Message>;
  parse<Params extends MessageCreateParamsNonStreaming>(
    body: Params & SessionParams,
    options?: AnthropicRequestOptions,
  ): APIPromise<ParsedMessage<ExtractParsedContentFromParams<Params>>>;
  /** The SDK's `MessageStream` over a balanced streaming call (`.on('text')`, `finalMessage()`). */
  stream<Params extends MessageStreamParams>(
    body: Params & SessionParams,
    options?: AnthropicRequestOptions,
  ): MessageStream<ExtractParsedContentFromParams<Params>>;
  /** Passed through to a deployment serving the model; uses none of its token quota. */
  countTokens(
    body: MessageCountTokensParams & SessionParams,
    options?: AnthropicRequestOptions,
  ): APIPromise<MessageTokensCount>;
}

interface MessageUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

function usageOf(usage: MessageUsage | undefined | null, input?: number): Usage | undefined {
  if (!usage) return undefined;
  const out: Usage = { input: usage.input_tokens ?? input ?? 0, output: usage.output_tokens ?? 0 };
  if (usage.cache_read_input_tokens) out.cacheRead = usage.cache_read_input_tokens;
  if (usage.cache_creation_input_tokens) out.cacheWrite = usage.cache_creation_input_tokens;
  return out;
}

/**
 * The Messages API (`POST /v1/messages`) on Claude deployments of Azure AI Foundry.
 *
 * @example
 * ```ts
 * await sb.messages.create({ model: 'claude-sonnet-5', max_tokens: 256, messages: [{ role: 'user', content: 'Hi' }] });
 * ```
 */
export const messages = defineAdapter<SwitchboardMessages, Anthropic>()({
  name: 'messages',
  path: ['messages'],
  provider: 'anthropic',
  operations: {
    create: {
      send: (client, body, options) => client.messages.create(body as never, options as never),
    },
    parse: {
      streams: () => false,
      // The SDK's `messages.parse()` resolves to a plain promise without the response: create and
      // parse as it does, keeping the response.
      send: (client, body, options) => client.messages.create(body as never, options as never),
      data: (data, body, client) =>
        parseMessage(data as Message, body as never, { logger: client.logger ?? console }),
    },
    countTokens: {
      metered: false,
      streams: () => false,
      send: (client, body, options) => client.messages.countTokens(body as never, options as never),
    },
  },
  admission(body, defaultOutput) {
    const input =
      Math.ceil((textLength(body.messages) + contentLength(body.system) + schemaLength(body)) / 4) +
      claudeImageTokens(body.messages) +
      (Array.isArray(body.tools) && body.tools.length > 0 ? TOOL_USE_PROMPT : 0);
    // Where the prefix is cached, reading it costs no input quota.
    const prefix = cachePrefixOf(body);
    return admissionRecord(input, tokenField(body.max_tokens) || defaultOutput, undefined, prefix);
  },
  usage: (data) => usageOf((data as { usage?: MessageUsage }).usage),
  streamUsage(event, memo) {
    const e = event as { type?: string; message?: { usage?: MessageUsage }; usage?: MessageUsage };
    // message_start carries the input (and a first output count); each message_delta the
    // cumulative output.
    const usage =
      e.type === 'message_start'
        ? e.message?.usage
        : e.type === 'message_delta'
          ? e.usage
          : undefined;
    if (!usage) return undefined;
    if (usage.input_tokens != null) memo.input = usage.input_tokens;
    return usageOf(usage, memo.input);
  },
  facade: (surface) => new MessagesFacade(surface) as unknown as SwitchboardMessages,
});

/** `sb.messages`: `create` and `parse` as every surface's, the SDK's stream, and `countTokens`. */
class MessagesFacade extends SurfaceFacade {
  /**
   * The SDK's `MessageStream` calls `messages.create(...).withResponse()`: given this facade as
   * that resource, its request is balanced and accounted.
   */
  stream(body: MessageStreamParams, options?: AnthropicRequestOptions): unknown {
    return MessageStream.createMessage(
      this as unknown as Anthropic['messages'],
      body as never,
      options,
    );
  }

  countTokens(body: unknown, options?: unknown): Promise<unknown> {
    return this.surface.call('countTokens', body, options);
  }
}

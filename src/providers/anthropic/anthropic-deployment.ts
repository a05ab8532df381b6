import Anthropic from '@anthropic-ai/sdk';
import { Stream } from '@anthropic-ai/sdk/streaming';
import { AnthropicFoundry } from '@anthropic-ai/foundry-sdk';
import type { AnthropicConfig } from '../../config/switchboard-options';
import {
  Deployment,
  type Operation,
  type PreparedRequest,
  type ProviderErrors,
  type SdkRequestOptions,
} from '../../registry/deployment';
import type { ModelState } from '../../registry/model-state';
import { contentLength, textLength } from '../text-length';

const ERRORS: ProviderErrors = {
  APIError: Anthropic.APIError,
  APIConnectionError: Anthropic.APIConnectionError,
  APIConnectionTimeoutError: Anthropic.APIConnectionTimeoutError,
  APIUserAbortError: Anthropic.APIUserAbortError,
};

interface Usage {
  input_tokens?: number | null;
  output_tokens?: number | null;
}

/**
 * A Claude deployment on Azure AI Foundry, reached through `@anthropic-ai/foundry-sdk` (a string
 * key goes out as `x-api-key`, a token function's result as `Authorization: Bearer`).
 *
 * @example
 * ```ts
 * const d = sb.deployments.get('foundry1') as AnthropicDeployment;
 * d.client.baseURL; // 'https://my-resource.services.ai.azure.com/anthropic/'
 * ```
 */
export class AnthropicDeployment extends Deployment {
  readonly provider = 'anthropic' as const;
  readonly errors = ERRORS;
  /** The SDK client for this deployment (built with `maxRetries: 0`). */
  readonly client: AnthropicFoundry;

  constructor(config: AnthropicConfig, models: ReadonlyMap<string, ModelState>) {
    super(config.name, models, config.timeout ?? 30_000);
    const key = config.apiKey;
    this.client = new AnthropicFoundry({
      ...(config.baseURL
        ? { baseURL: config.baseURL, resource: null }
        : { resource: config.resource }),
      ...(typeof key === 'function' ? { azureADTokenProvider: key } : { apiKey: key }),
      maxRetries: 0,
      timeout: this.timeout,
    });
  }

  prepare(body: Record<string, unknown>): PreparedRequest {
    const chars = textLength(body.messages) + contentLength(body.system);
    return {
      body,
      stream: body.stream === true,
      estimate: Math.ceil(chars / 4),
      hideUsageChunk: false,
    };
  }

  send(op: Operation, body: Record<string, unknown>, options: SdkRequestOptions): Promise<unknown> {
    const messages = this.client.messages as unknown as Record<
      Operation,
      (b: unknown, o: unknown) => Promise<unknown>
    >;
    return messages[op](body, options);
  }

  usageOf(result: unknown): number | undefined {
    const usage = (result as { usage?: Usage }).usage;
    return usage ? (usage.input_tokens ?? 0) + (usage.output_tokens ?? 0) : undefined;
  }

  streamUsage(event: unknown, memo: { input: number }): number | undefined {
    const e = event as { type?: string; message?: { usage?: Usage }; usage?: Usage };
    let usage: Usage | undefined;
    if (e.type === 'message_start') usage = e.message?.usage;
    else if (e.type === 'message_delta') usage = e.usage;
    if (!usage) return undefined;
    if (usage.input_tokens != null) memo.input = usage.input_tokens;
    return memo.input + (usage.output_tokens ?? 0);
  }

  makeStream(iterator: () => AsyncIterator<unknown>, controller: AbortController): unknown {
    return new Stream(iterator, controller, this.client);
  }
}

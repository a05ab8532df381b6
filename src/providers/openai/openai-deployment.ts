import OpenAI from 'openai';
import { Stream } from 'openai/streaming';
import type { OpenAIConfig } from '../../config/switchboard-options';
import {
  Deployment,
  type Operation,
  type PreparedRequest,
  type ProviderErrors,
  type SdkRequestOptions,
} from '../../registry/deployment';
import type { ModelState } from '../../registry/model-state';
import { textLength } from '../text-length';

const ERRORS: ProviderErrors = {
  APIError: OpenAI.APIError,
  APIConnectionError: OpenAI.APIConnectionError,
  APIConnectionTimeoutError: OpenAI.APIConnectionTimeoutError,
  APIUserAbortError: OpenAI.APIUserAbortError,
};

interface Usage {
  usage?: { total_tokens?: number } | null;
}

/**
 * An OpenAI or Azure OpenAI (v1) deployment, reached through the official `openai` client.
 *
 * @example
 * ```ts
 * const d = sb.deployments.get('east') as OpenAIDeployment;
 * const models = await d.client.models.list(); // the raw SDK client, when you need it
 * ```
 */
export class OpenAIDeployment extends Deployment {
  readonly provider = 'openai' as const;
  readonly errors = ERRORS;
  /** The SDK client for this deployment (built with `maxRetries: 0`). */
  readonly client: OpenAI;

  constructor(config: OpenAIConfig, models: ReadonlyMap<string, ModelState>) {
    super(config.name, models, config.timeout ?? 30_000);
    this.client = new OpenAI({
      baseURL: config.baseURL,
      apiKey: config.apiKey,
      maxRetries: 0,
      timeout: this.timeout,
    });
  }

  prepare(body: Record<string, unknown>): PreparedRequest {
    const estimate = Math.ceil(textLength(body.messages) / 4);
    const stream = body.stream === true;
    if (!stream) return { body, stream, estimate, hideUsageChunk: false };
    const streamOptions = body.stream_options as { include_usage?: boolean } | null | undefined;
    if (streamOptions?.include_usage !== undefined) {
      return { body, stream, estimate, hideUsageChunk: false };
    }
    return {
      body: { ...body, stream_options: { ...streamOptions, include_usage: true } },
      stream,
      estimate,
      hideUsageChunk: true,
    };
  }

  send(op: Operation, body: Record<string, unknown>, options: SdkRequestOptions): Promise<unknown> {
    const completions = this.client.chat.completions as unknown as Record<
      Operation,
      (b: unknown, o: unknown) => Promise<unknown>
    >;
    return completions[op](body, options);
  }

  usageOf(result: unknown): number | undefined {
    return (result as Usage).usage?.total_tokens;
  }

  streamUsage(event: unknown): number | undefined {
    return (event as Usage).usage?.total_tokens ?? undefined;
  }

  override isUsageChunk(event: unknown): boolean {
    const chunk = event as { choices?: unknown[]; usage?: unknown };
    return chunk.usage != null && Array.isArray(chunk.choices) && chunk.choices.length === 0;
  }

  makeStream(iterator: () => AsyncIterator<unknown>, controller: AbortController): unknown {
    return new Stream(iterator, controller, this.client);
  }
}

import Anthropic from '@anthropic-ai/sdk';
import { APIPromise } from '@anthropic-ai/sdk/core/api-promise';
import { callPromises } from '../call-promise';
import { Stream } from '@anthropic-ai/sdk/streaming';
import { AnthropicFoundry } from '@anthropic-ai/foundry-sdk';
import { Deployment, type ProviderErrors } from '../../registry/deployment';
import type { ModelState } from '../../registry/model-state';
import type { AnthropicConfig } from '../../types';
import type { ProviderKit } from '../provider-kit';

const ERRORS: ProviderErrors = {
  APIError: Anthropic.APIError,
  APIConnectionError: Anthropic.APIConnectionError,
  APIConnectionTimeoutError: Anthropic.APIConnectionTimeoutError,
  APIUserAbortError: Anthropic.APIUserAbortError,
  RateLimitError: Anthropic.RateLimitError,
};

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
  /** @internal */
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

  /** @internal */
  makeStream(iterator: () => AsyncIterator<unknown>, controller: AbortController): unknown {
    return new Stream(iterator, controller, this.client);
  }
}

/** @internal The `@anthropic-ai/sdk` provider: its deployments and its `APIPromise`. */
export const anthropicProvider: ProviderKit<AnthropicConfig> = {
  errors: ERRORS,
  charge: 'actual',
  deployment: (config, models) => new AnthropicDeployment(config, models),
  promise: callPromises(APIPromise, {
    request_id: 'request-id',
    workspace_id: 'anthropic-workspace-id',
  }),
};

/** The `@anthropic-ai/sdk` client's request options (`signal`, `headers`, `timeout`, ...). */
export type AnthropicRequestOptions = NonNullable<Parameters<Anthropic['messages']['create']>[1]>;

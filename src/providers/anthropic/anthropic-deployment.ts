import Anthropic from '@anthropic-ai/sdk';
import { APIPromise } from '@anthropic-ai/sdk/core/api-promise';
import { callPromises } from '../call-promise';
import { Stream } from '@anthropic-ai/sdk/streaming';
import { AnthropicFoundry } from '@anthropic-ai/foundry-sdk';
import { Deployment } from '../../registry/deployment';
import type { ModelState } from '../../registry/model-state';
import type { AnthropicConfig } from '../../types';
import { errorsOf, type ProviderKit } from '../provider-kit';
import { clientKey } from '../token-provider';
import { NO_REDIRECTS } from '../redirect';
import { clientFetch } from '../client-fetch';
import { toWire, wireNames, type WireOptions } from '../wire-model';

const ERRORS = errorsOf(Anthropic);

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
class AnthropicDeployment extends Deployment {
  readonly provider = 'anthropic' as const;
  /** @internal */
  readonly errors = ERRORS;
  /** The SDK client for this deployment (built with `maxRetries: 0`). */
  readonly client: AnthropicFoundry;

  constructor(config: AnthropicConfig, models: ReadonlyMap<string, ModelState>) {
    super(config, models);
    const key = clientKey(config.apiKey, config.name);
    const options: FoundryOptions = {
      ...(config.baseURL
        ? { baseURL: config.baseURL, resource: null }
        : { resource: config.resource }),
      ...(typeof key === 'function' ? { azureADTokenProvider: key } : { apiKey: key }),
      maxRetries: 0,
      timeout: this.timeout,
      fetchOptions: NO_REDIRECTS,
      ...clientFetch(config),
    };
    const names = wireNames(config.models);
    this.client = names
      ? new NamedDeploymentsFoundry({ ...options, wireNames: names })
      : new AnthropicFoundry(options);
  }

  /** @internal */
  makeStream(iterator: () => AsyncIterator<unknown>, controller: AbortController): unknown {
    return new Stream(iterator, controller, this.client);
  }
}

type FoundryOptions = NonNullable<ConstructorParameters<typeof AnthropicFoundry>[0]>;

/**
 * The Foundry client of a deployment whose models have upstream names of their own: each
 * request's `model` is put in the upstream's name as the request is prepared ({@link toWire}).
 * The names travel in the client options, so `withOptions()` copies keep them.
 */
class NamedDeploymentsFoundry extends AnthropicFoundry {
  /** Caller's name -> the upstream's, for {@link renamesModel}. */
  readonly wireNames: ReadonlyMap<string, string>;

  constructor(options: FoundryOptions & { wireNames: ReadonlyMap<string, string> }) {
    super(options);
    this.wireNames = options.wireNames;
  }

  // The SDK's own options type is not exported (an internal module): its `body` is all we touch.
  protected override prepareOptions(options: WireOptions): Promise<void> {
    toWire(options, this.wireNames);
    return super.prepareOptions(options as never);
  }
}

/** @internal The `@anthropic-ai/sdk` provider: its deployments and its `APIPromise`. */
export const anthropicProvider: ProviderKit<AnthropicConfig> = {
  errors: ERRORS,
  deployment: (config, models) => new AnthropicDeployment(config, models),
  promise: callPromises(APIPromise, {
    request_id: 'request-id',
    workspace_id: 'anthropic-workspace-id',
  }),
};

/** The `@anthropic-ai/sdk` client's request options (`signal`, `headers`, `timeout`, ...). */
export type AnthropicRequestOptions = NonNullable<Parameters<Anthropic['messages']['create']>[1]>;

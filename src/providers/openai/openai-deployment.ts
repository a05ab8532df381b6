import OpenAI, { type ClientOptions } from 'openai';
import { APIPromise } from 'openai/core/api-promise';
import { callPromises } from '../call-promise';
import { Stream } from 'openai/streaming';
import { Deployment } from '../../registry/deployment';
import type { ModelState } from '../../registry/model-state';
import type { OpenAIConfig } from '../../types';
import { errorsOf, type ProviderKit } from '../provider-kit';
import { clientKey } from '../token-provider';
import { NO_REDIRECTS } from '../redirect';
import { clientFetch } from '../client-fetch';
import { toWire, wireNames, type WireOptions } from '../wire-model';

const ERRORS = errorsOf(OpenAI);

/**
 * An OpenAI or Azure OpenAI (v1) deployment, reached through the official `openai` client.
 *
 * @example
 * ```ts
 * const d = sb.deployments.get('east') as OpenAIDeployment;
 * const models = await d.client.models.list(); // the raw SDK client, when you need it
 * ```
 */
class OpenAIDeployment extends Deployment {
  readonly provider = 'openai' as const;
  /** @internal */
  readonly errors = ERRORS;
  /** The SDK client for this deployment (built with `maxRetries: 0`). */
  readonly client: OpenAI;

  constructor(config: OpenAIConfig, models: ReadonlyMap<string, ModelState>) {
    super(config, models);
    const options: ClientOptions = {
      baseURL: config.baseURL,
      apiKey: clientKey(config.apiKey, config.name),
      maxRetries: 0,
      timeout: this.timeout,
      fetchOptions: NO_REDIRECTS,
      ...clientFetch(config),
    };
    const names = wireNames(config.models);
    this.client = names
      ? new NamedDeploymentsOpenAI({ ...options, wireNames: names })
      : new OpenAI(options);
  }

  /** @internal */
  makeStream(iterator: () => AsyncIterator<unknown>, controller: AbortController): unknown {
    return new Stream(iterator, controller, this.client);
  }
}

/**
 * The `openai` client of a deployment whose models have upstream names of their own: each
 * request's `model` is put in the upstream's name as the request is prepared ({@link toWire}).
 * The names travel in the client options, so `withOptions()` copies keep them.
 */
class NamedDeploymentsOpenAI extends OpenAI {
  /** Caller's name -> the upstream's, for {@link renamesModel}. */
  readonly wireNames: ReadonlyMap<string, string>;

  constructor(options: ClientOptions & { wireNames: ReadonlyMap<string, string> }) {
    super(options);
    this.wireNames = options.wireNames;
  }

  // The SDK's own options type is not exported (an internal module): its `body` is all we touch.
  protected override prepareOptions(options: WireOptions): Promise<void> {
    toWire(options, this.wireNames);
    return super.prepareOptions(options as never);
  }
}

/** @internal The `openai` provider: its deployments and its `APIPromise`. */
export const openaiProvider: ProviderKit<OpenAIConfig> = {
  errors: ERRORS,
  deployment: (config, models) => new OpenAIDeployment(config, models),
  promise: callPromises(APIPromise, { request_id: 'x-request-id' }),
};

/** The `openai` client's request options (`signal`, `headers`, `timeout`, ...). */
export type OpenAIRequestOptions = NonNullable<
  Parameters<OpenAI['chat']['completions']['create']>[1]
>;

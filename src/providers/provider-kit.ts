import type { DeploymentBuilder, ProviderErrors } from '../registry/deployment';
import type { DeploymentConfig } from '../types';
import type { CallPromises } from './call-promise';

/**
 * What the switchboard needs of one provider (one SDK): its deployments (what the registry builds
 * them with), its error classes, and its `APIPromise` class around a switchboard call.
 *
 * @example
 * ```ts
 * const d = openaiProvider.deployment(config, models);
 * ```
 */
export interface ProviderKit<
  Config extends DeploymentConfig = DeploymentConfig,
> extends DeploymentBuilder<Config> {
  errors: ProviderErrors;
  /** The SDK's own `APIPromise` of a call: over its answer, or settled by its dispatch. */
  promise: CallPromises;
}

/**
 * The error classes a provider's failures are told apart by, taken from its SDK's client class,
 * which both SDKs hang them on under the same names.
 *
 * @example
 * ```ts
 * const errors = errorsOf(OpenAI);
 * error instanceof errors.RateLimitError;
 * ```
 */
export function errorsOf(sdk: ProviderErrors): ProviderErrors {
  const {
    APIError,
    APIConnectionError,
    APIConnectionTimeoutError,
    APIUserAbortError,
    RateLimitError,
  } = sdk;
  return {
    APIError,
    APIConnectionError,
    APIConnectionTimeoutError,
    APIUserAbortError,
    RateLimitError,
  };
}

import type { Answer, DeploymentBuilder, ProviderErrors } from '../registry/deployment';
import type { DeploymentConfig } from '../types';

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
  /** The SDK's own `APIPromise` over the answer of the attempt that succeeded. */
  promise(answer: Promise<Answer>): Promise<unknown>;
}

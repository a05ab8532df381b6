import type { Answer, Deployment, ProviderErrors } from '../registry/deployment';
import type { ModelState } from '../registry/model-state';
import type { ChargePolicy } from '../quota/admission';
import type { DeploymentConfig } from '../types';

/**
 * What the switchboard needs of one provider (one SDK): its deployments, its error classes, and
 * its `APIPromise` class around a switchboard call.
 *
 * @example
 * ```ts
 * const d = openaiProvider.deployment(config, models);
 * ```
 */
export interface ProviderKit<Config extends DeploymentConfig = DeploymentConfig> {
  errors: ProviderErrors;
  /**
   * How its upstream reconciles the admission charge: Azure OpenAI keeps the output reservation
   * for the minute (`reserve`), Foundry settles output to what was produced (`actual`).
   */
  charge: ChargePolicy;
  deployment(config: Config, models: ReadonlyMap<string, ModelState>): Deployment;
  /** The SDK's own `APIPromise` over the answer of the attempt that succeeded. */
  promise(answer: Promise<Answer>): Promise<unknown>;
}

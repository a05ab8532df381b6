/**
 * `nestjs-switchboard`: what a Nest or standalone application needs to route its LLM calls (the
 * module and the three providers it registers (the switchboard, the deployment registry, the
 * selector seam), its options and errors, the health indicator, the shared state and the config
 * loader). Kept small on purpose: what custom-store, selector and
 * adapter authors need lives in `nestjs-switchboard/extend`, simulated deployments in
 * `nestjs-switchboard/testing`; everything else is internal and may change in any release.
 *
 * @example
 * ```ts
 * import { createSwitchboard } from 'nestjs-switchboard';
 *
 * const sb = createSwitchboard({
 *   deployments: [{ name: 'east', baseURL: 'https://east.example/openai/v1', apiKey: 'k', models: [{ name: 'gpt-4o', tpm: 30_000 }] }],
 * });
 * const answer = await sb.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hi' }] });
 * ```
 *
 * @packageDocumentation
 */
export { Switchboard, createSwitchboard } from './switchboard';
export type { OpenAIRequestOptions } from './providers/openai/openai-deployment';
export type { AnthropicRequestOptions } from './providers/anthropic/anthropic-deployment';
export { SwitchboardModule } from './switchboard.module';
export { SWITCHBOARD_MODULE_OPTIONS } from './switchboard.module-definition';
export type {
  SwitchboardModuleOptions,
  SwitchboardModuleAsyncOptions,
  SwitchboardOptionsFactory,
} from './switchboard.module-definition';
export type { SwitchboardOptions } from './config/switchboard-options';
export type {
  ApiKey,
  ModelConfig,
  OpenAIConfig,
  AnthropicConfig,
  DeploymentConfig,
  RoutingConfig,
  FailoverOptions,
  SwitchboardLogger,
  Price,
  SessionParams,
} from './types';
export type { QueueOptions } from './scheduling/queue-options';
export type { TenantPolicy } from './tenants/tenant-options';
export { SwitchboardError } from './switchboard.error';
export type { SwitchboardErrorCode } from './switchboard.error';
export { SwitchboardConfigError } from './config/switchboard-config.error';
export { TokenProviderError } from './failover/token-provider.error';
export { SwitchboardHealthIndicator } from './health/switchboard-health.indicator';
export type { SwitchboardHealthDetails } from './health/switchboard-health.indicator';
export { DeploymentRegistry } from './registry/deployment-registry';
export type { ModelStats } from './registry/deployment-registry';
export { Selector } from './selection/selector';
export { TwoRandomChoices } from './selection/two-random-choices';
export type { TwoRandomChoicesOptions } from './selection/two-random-choices';
export { memoryState } from './state/state-store';
export { redisState } from './state/redis-state';
export type { RedisStateOptions } from './state/redis-state';
export {
  switchboardConfig,
  loadSwitchboardConfig,
  SWITCHBOARD_CONFIG_ENV,
} from './config/switchboard.config';
export { loadSwitchboardConfigFile, parseSwitchboardConfig } from './config/load-config-file';

export { Switchboard, createSwitchboard } from './switchboard';
export type {
  SessionParams,
  OpenAIRequestOptions,
  AnthropicRequestOptions,
  SwitchboardChatCompletions,
  SwitchboardMessages,
} from './switchboard';
export { SwitchboardError } from './switchboard.error';
export type {
  ApiKey,
  ModelConfig,
  OpenAIConfig,
  AnthropicConfig,
  DeploymentConfig,
  FailoverOptions,
  SwitchboardOptions,
  SwitchboardLogger,
} from './config/switchboard-options';
export { validateOptions, switchboardOptionsSchema } from './config/validate-options';
export { Deployment } from './registry/deployment';
export type { Provider, Operation } from './registry/deployment';
export { DeploymentRegistry } from './registry/deployment-registry';
export type { ModelStats, ModelListener } from './registry/deployment-registry';
export { ModelState, DEFAULT_COOLDOWN } from './registry/model-state';
export type { ModelEvent } from './registry/model-state';
export { OpenAIDeployment } from './providers/openai/openai-deployment';
export { AnthropicDeployment } from './providers/anthropic/anthropic-deployment';
export { Selector } from './selection/selector';
export { TwoRandomChoices } from './selection/two-random-choices';
export type { TwoRandomChoicesOptions } from './selection/two-random-choices';
export { SessionAffinity } from './selection/session-affinity';
export { classify, retryAfterMs } from './failover/classify';
export type { FailureReason, Verdict } from './failover/classify';
export { DEFAULT_ATTEMPTS } from './failover/failover';
export { memoryState } from './state/state-store';
export type { StateStore, StateStoreHealth } from './state/state-store';
export { METER_NAME, SwitchboardMetrics } from './telemetry/switchboard-metrics';

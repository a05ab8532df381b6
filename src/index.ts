export { Switchboard, createSwitchboard } from './switchboard';
export type {
  SessionParams,
  OpenAIRequestOptions,
  AnthropicRequestOptions,
  SwitchboardChatCompletions,
  SwitchboardResponses,
  SwitchboardEmbeddings,
  SwitchboardMessages,
  BuiltinSurfaces,
} from './switchboard';
export { defineAdapter } from './providers/adapter';
export type {
  ApiAdapter,
  ApiOperation,
  AdapterAt,
  ApiPromiseLike,
  ChainRules,
  Mounted,
  PreparedBody,
  Surface,
  SurfacesOf,
} from './providers/adapter';
export type { Admission, TokenUsage, ChargePolicy } from './quota/admission';
export { QuotaLimit } from './quota/quota-limit';
export type { LimitName } from './quota/quota-limit';
export { UsageWindow } from './quota/usage-window';
export { QuotaLedger } from './quota/quota-ledger';
export type { QuotaLedgerOptions, SharedUsage } from './quota/quota-ledger';
export type { LimitListener, SharedReading } from './quota/reading';
export type { LimitCounter } from './quota/counter';
export type { UsageWindowKind, UsageBucket } from './quota/usage-window';
export { CapacityQueue } from './scheduling/capacity-queue';
export type { CapacityQueueOptions, RouteAttempt, WaitOptions } from './scheduling/capacity-queue';
export type { CallTags, Lane } from './scheduling/lanes';
export { isNoRoom } from './quota/no-room';
export { SwitchboardError } from './switchboard.error';
export type { DeploymentExplanation, PassedOverReason } from './placement/explanation';
export type { SwitchboardFetch } from './relay/relay';
export {
  errorBody as apiErrorBody,
  upstreamErrorBody as apiUpstreamErrorBody,
} from './relay/error-body';
export type { Problem as ApiProblem } from './relay/error-body';
export type { SwitchboardErrorCode } from './switchboard.error';
export { clip } from './errors/clip';
export { REDACTED, scrub, STACK_LIMIT, UPSTREAM_TEXT_LIMIT } from './errors/scrub';
export { httpErrorFor, retryHeaders, MAX_RETRY_AFTER_MS } from './errors/http-error';
export type { HttpErrorAnswer, HttpErrorOptions } from './errors/http-error';
export type {
  ApiKey,
  ModelConfig,
  OpenAIConfig,
  AnthropicConfig,
  DeploymentConfig,
  RoutingConfig,
  QueueOptions,
  FailoverOptions,
  SwitchboardOptions,
  SwitchboardLogger,
  Price,
  TenantPolicy,
  TenantBudget,
} from './config/switchboard-options';
export { validateOptions, switchboardOptionsSchema } from './config/validate-options';
export { Deployment } from './registry/deployment';
export type { Provider, Operation } from './registry/deployment';
export { DeploymentRegistry } from './registry/deployment-registry';
export type { ModelStats, ModelListener } from './registry/deployment-registry';
export { ModelState, DEFAULT_COOLDOWN } from './registry/model-state';
export { InFlight } from './registry/in-flight';
export { LatencyTracker, DEFAULT_LATENCY_DECAY, type LatencySnapshot } from './registry/latency';
export type { ModelEvent, ReportedRemaining } from './registry/model-state';
export { OpenAIDeployment } from './providers/openai/openai-deployment';
export { AnthropicDeployment } from './providers/anthropic/anthropic-deployment';
export { Selector, type Gate } from './selection/selector';
export { TwoRandomChoices } from './selection/two-random-choices';
export type { TwoRandomChoicesOptions } from './selection/two-random-choices';
export { SessionAffinity } from './selection/session-affinity';
export { classify, retryAfterMs } from './failover/classify';
export { TokenProviderError } from './failover/token-provider.error';
export type { FailureReason, Verdict } from './failover/classify';
export { DEFAULT_ATTEMPTS } from './failover/failover';
export { memoryState } from './state/state-store';
export type { StateStore, StateStoreHealth, StateContext } from './state/state-store';
export { peerFold } from './state/peer-report';
export type {
  PeerReport,
  PeerModelReport,
  PeerUsage,
  PeerReading,
  PeerFoldOptions,
  PeerFoldTarget,
} from './state/peer-report';
export { redisState } from './state/redis-state';
export type { RedisStateOptions, RedisClientLike } from './state/redis-state';
export {
  METER_NAME,
  SWITCHBOARD_METRICS,
  SwitchboardMetrics,
  type CallFailureReason,
  type SwitchboardMetricsOptions,
} from './telemetry/switchboard-metrics';
export { SwitchboardModule } from './switchboard.module';
export { SWITCHBOARD_MODULE_OPTIONS } from './switchboard.module-definition';
export type {
  SwitchboardModuleOptions,
  SwitchboardModuleAsyncOptions,
  SwitchboardModuleExtras,
  SwitchboardOptionsFactory,
} from './switchboard.module-definition';
export { SwitchboardHealthIndicator } from './health/switchboard-health.indicator';
export type {
  ModelHealth,
  TierHealth,
  SwitchboardHealthDetails,
  SwitchboardHealthOptions,
} from './health/switchboard-health.indicator';
export type { HealthResult, HealthResults } from './health/health-results';
export {
  switchboardConfig,
  loadSwitchboardConfig,
  SWITCHBOARD_CONFIG_ENV,
} from './config/switchboard.config';
export { loadSwitchboardConfigFile, parseSwitchboardConfig } from './config/load-config-file';
export type { SwitchboardEnv, ParseSwitchboardConfigOptions } from './config/load-config-file';
export { SwitchboardConfigError } from './config/switchboard-config.error';

/**
 * `nestjs-switchboard/extend`: for those who extend the switchboard rather than call it — authors
 * of a custom shared store (`StateStore`, `peerFold`), a selector (`Selector` sees `Deployment`s
 * and their `ModelState`), an adapter for another API (`defineAdapter`), a gateway in front of it
 * (the error bodies and retry headers the switchboard's own answers use) or a status page (the
 * registry, its events and a model's read-only quota). Also every type a public one names. The
 * package root stays what an application needs; the rest of the package is internal.
 *
 * @example
 * ```ts
 * import { createSwitchboard, Selector } from 'nestjs-switchboard';
 * import type { Deployment } from 'nestjs-switchboard/extend';
 *
 * // The candidate whose model is least utilized.
 * class LeastUtilized extends Selector {
 *   select(model: string, candidates: readonly Deployment[]): Deployment {
 *     return candidates.reduce((a, b) => (b.models.get(model)!.util < a.models.get(model)!.util ? b : a));
 *   }
 * }
 * createSwitchboard({ deployments, selector: new LeastUtilized() });
 * ```
 *
 * @packageDocumentation
 */
export type { BuiltinSurfaces } from '../switchboard';
export type { SwitchboardChatCompletions } from '../providers/openai/chat';
export type { SwitchboardResponses } from '../providers/openai/responses';
export type { SwitchboardEmbeddings } from '../providers/openai/embeddings';
export type { SwitchboardMessages } from '../providers/anthropic/messages';
export { defineAdapter } from '../providers/adapter';
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
} from '../providers/adapter';
export type { Admission, TokenUsage, ChargePolicy } from '../quota/admission';
export type { CallTags, Lane } from '../scheduling/lanes';
export type { QueueView } from '../scheduling/queue-view';
export type { FailedCalls } from '../routing/router';
export type { DeploymentExplanation, PassedOverReason } from '../errors/explanation';
export type { SwitchboardFetch } from '../relay/relay';
export {
  bodyShapeProblem,
  MAX_BODY_CONTAINERS,
  MAX_BODY_DEPTH,
  MAX_BODY_VALUES,
} from '../relay/body-checks';
export type { BodyShapeProblem } from '../relay/body-checks';
export { readRequestBody, REQUEST_BODY } from '../relay/request-body';
export type { RequestBody, RelayRequestInit } from '../relay/request-body';
export {
  errorBody as apiErrorBody,
  upstreamErrorBody as apiUpstreamErrorBody,
} from '../relay/error-body';
export type { Problem as ApiProblem } from '../relay/error-body';
export { clip } from '../errors/clip';
export { REDACTED, scrub, STACK_LIMIT, UPSTREAM_TEXT_LIMIT } from '../errors/scrub';
export { httpErrorFor, retryHeaders, MAX_RETRY_AFTER_MS } from '../relay/http-error';
export type { HttpErrorAnswer, HttpErrorOptions } from '../relay/http-error';
export type { TenantBudget } from '../tenants/tenant-options';
export { validateOptions } from '../config/validate-options';
export { switchboardOptionsSchema } from '../config/options-schema';
export { MAX_CONFIG_FILE_BYTES, readBoundedFile } from '../config/read-bounded-file';
export type { SwitchboardEnv, ParseSwitchboardConfigOptions } from '../config/load-config-file';
export type { SwitchboardModuleExtras } from '../switchboard.module-definition';
export type { Deployment, Provider, Operation } from '../registry/deployment';
export { DeploymentRegistry } from '../registry/deployment-registry';
export type { ModelListener, Sessions } from '../registry/deployment-registry';
export type { ModelState } from '../registry/model-state';
export type { ModelEvent } from '../registry/model-event';
export type { ReportedRemaining } from '../quota/reading';
export type { QuotaView, LimitView } from '../registry/quota-view';
export type { LatencySnapshot, LatencyView } from '../registry/latency';
export type { InFlightView } from '../registry/in-flight';
export type { LimitName } from '../quota/quota-limit';
export type { Gate } from '../selection/selector';
export type { FailureReason, Verdict } from '../failover/classify';
export type { StateStore, StateStoreHealth, StateContext } from '../state/state-store';
export { peerFold } from '../state/peer-report';
export type {
  PeerReport,
  PeerModelReport,
  PeerUsage,
  PeerFoldOptions,
  PeerFoldTarget,
} from '../state/peer-report';
export type { RedisClientLike } from '../state/redis-state';
export type { LeaseOptions } from '../state/leases/lease-options';
export {
  METER_NAME,
  SWITCHBOARD_METRICS,
  SwitchboardMetrics,
  type CallFailureReason,
  type SwitchboardMetricsOptions,
  type PriceLookup,
} from '../telemetry/switchboard-metrics';
export type {
  ModelHealth,
  TierHealth,
  SwitchboardHealthOptions,
} from '../health/switchboard-health.indicator';
export type { HealthResult, HealthResults } from '../health/health-results';

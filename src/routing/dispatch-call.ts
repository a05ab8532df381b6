import type { SwitchboardLogger } from '../types';
import type { FailoverPolicy } from '../failover/failover';
import type { ApiAdapter, ApiOperation } from '../providers/adapter';
import type { AttemptHooks, PreparedRequest } from '../providers/attempt-types';
import type { CapacityQueue } from '../scheduling/capacity-queue';
import type { CallTags, LaneActivity } from '../scheduling/lanes';
import type { Deployment, SdkRequestOptions } from '../registry/deployment';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { DeploymentPicker } from '../selection/pick';
import type { ModelState } from '../registry/model-state';
import type { StateStore } from '../state/state-store';
import type { SwitchboardMetrics } from '../telemetry/switchboard-metrics';
import type { TrafficRecorder } from '../traffic/traffic-recorder';
import type { TagSet } from '../placement/tags';
import type { SkippedFallback } from '../translate/fallback-choice';

/**
 * What the dispatch of every call shares with its switchboard's router; made once.
 *
 * @example
 * ```ts
 * const shared: DispatchShared = { registry, picker, state, logger, queue, policy, metrics, hooks, clock, countFailure };
 * ```
 */
export interface DispatchShared {
  readonly registry: DeploymentRegistry;
  /** Picks a deployment among the registry's. */
  readonly picker: DeploymentPicker;
  readonly state: StateStore;
  readonly logger: SwitchboardLogger;
  /** Calls waiting for room, when the switchboard has a queue. */
  readonly queue: CapacityQueue | undefined;
  /** When interactive traffic was last seen, and the headroom batch calls leave it. */
  readonly lanes: LaneActivity;
  readonly policy: FailoverPolicy;
  readonly metrics: SwitchboardMetrics;
  readonly hooks: AttemptHooks;
  /** The models' clock (epoch ms), read once per routing. */
  readonly clock: () => number;
  /** Per model with a `contextWindow`, its window; `undefined` when none has one. */
  readonly windows: ReadonlyMap<string, number> | undefined;
  /** Count a call that failed for its caller. */
  countFailure(model: string, error: unknown): void;
  /** Writes one line per finished call, when `recordTraffic` is set. */
  readonly traffic?: TrafficRecorder;
}

/**
 * A call that builds on (or reads) a stored object: it goes to the deployment holding it, never
 * to another (which would answer 404), so it has no failover. `model` is the call's, if it names
 * one; `state` is the model's on that deployment (or, for calls without a model, the state that
 * their failures are reported to).
 *
 * @example
 * ```ts
 * const pin: Pin = { id: 'resp_1', deployment: east, state: east.models.get('gpt-4o')!, model: 'gpt-4o' };
 * ```
 */
export interface Pin {
  readonly id: string;
  readonly deployment: Deployment;
  readonly modelState: ModelState;
  readonly model: string | undefined;
}

/**
 * What one call is: its operation and prepared request, and where it may go.
 *
 * @example
 * ```ts
 * const call: DispatchCall = { adapter, op, request, options, sessionId: 'user-42', pool, tags };
 * ```
 */
export interface DispatchCall {
  readonly adapter: ApiAdapter;
  readonly op: ApiOperation;
  readonly request: PreparedRequest;
  /** The SDK's request options the caller passed (signal, timeout, headers). */
  readonly options?: SdkRequestOptions;
  /** The key the call sticks to a deployment by: its session, or its cacheable prefix. */
  readonly sessionId?: string;
  /** The deployments of the call's model that may take it. */
  readonly pool: readonly Deployment[];
  /** The models tried, in order, when the call's own has no room or fails. */
  readonly fallbacks?: readonly string[];
  /** The deployment holding the stored object the call builds on; then it goes nowhere else. */
  readonly pin?: Pin;
  /** Its lane and tenant; default: interactive, no tenant. */
  readonly tags?: CallTags;
  /** The tags a deployment must carry to take the call; `pool` holds only such deployments. */
  readonly required?: TagSet;
  /** The models tried when Azure's content filter refuses the call (`contentFilterFallbacks`). */
  readonly filterFallbacks?: readonly string[];
  /** Fallbacks of the other vendor left out because the call cannot be translated for them. */
  readonly skipped?: readonly SkippedFallback[];
}

/** A {@link DispatchCall} whose fields may be written: see {@link STRAIGHT_CALL}. */
export type WrittenCall = { -readonly [K in keyof DispatchCall]: DispatchCall[K] };

/**
 * The call of the router's straight path, one object rewritten for each call rather than a literal
 * made for each (as `Pricing`'s quote): a {@link Dispatch} copies what it needs of its call in its
 * constructor and keeps none of it. {@link letGo} empties it once the dispatch is made, so that it
 * holds no call's request or deployments alive.
 *
 * @example
 * ```ts
 * const call = STRAIGHT_CALL;
 * call.request = request; // ...each field the call has
 * const run = new Dispatch(shared, call);
 * letGo(call);
 * ```
 */
export const STRAIGHT_CALL: WrittenCall = emptyCall();

/** Empties `call` of what the last call wrote in it. */
export function letGo(call: WrittenCall): void {
  call.request = undefined!;
  call.options = undefined;
  call.sessionId = undefined;
  call.pool = undefined!;
  call.tags = undefined;
  call.required = undefined;
}

function emptyCall(): WrittenCall {
  return {
    adapter: undefined!,
    op: undefined!,
    request: undefined!,
    options: undefined,
    sessionId: undefined,
    pool: undefined!,
    tags: undefined,
    required: undefined,
  };
}

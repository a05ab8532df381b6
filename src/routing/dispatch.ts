import type { SwitchboardLogger } from '../config/switchboard-options';
import { classify } from '../failover/classify';
import { failover, type FailoverPolicy } from '../failover/failover';
import { isFilteredAnswer, refusalOf, type Refusal } from '../failover/refusals';
import type { ApiAdapter, ApiOperation } from '../providers/adapter';
import {
  runAttempt,
  type AttemptHooks,
  type AttemptOutcome,
  type PreparedRequest,
} from '../providers/attempt';
import type { CapacityQueue } from '../scheduling/capacity-queue';
import { UNTAGGED, type CallTags, type LaneActivity } from '../scheduling/lanes';
import { keptRoom } from '../quota/hot-row';
import type { Answer, Deployment, ProviderErrors, SdkRequestOptions } from '../registry/deployment';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { DeploymentPicker } from '../selection/pick';
import type { ModelState } from '../registry/model-state';
import { hasRoom, type CallGate } from '../selection/pick';
import type { StateStore } from '../state/state-store';
import { clip } from '../errors/clip';
import { SwitchboardError } from '../switchboard.error';
import type { Admission } from '../quota/admission';
import type { AttemptContext } from '../telemetry/gen-ai-telemetry';
import type { SwitchboardMetrics } from '../telemetry/switchboard-metrics';
import { fits, tokensNeeded } from './context-windows';
import type { TrafficRecorder } from '../traffic/traffic-recorder';
import { routeCall, type NoRoom, type Route, type RouteQuery } from './route-call';
import { explain } from './explanations';
import { waitForRoom } from './wait-for-room';
import type { DeploymentExplanation } from '../errors/explanation';
import type { TagSet } from '../placement/tags';
import { isNoRoom } from '../quota/no-room';
import { crossVendor } from '../translate/cross-vendor';
import { skippedSentence, type SkippedFallback } from '../translate/fallback-choice';
import { maxOutputOf } from '../translate/max-output';

const FIRST_ATTEMPT: AttemptContext = Object.freeze({ attempt: 1 });
/** Stands for "others are already waiting for room": no routing is tried. */
const QUEUED: NoRoom = Object.freeze({ waitMs: 0 });

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

/**
 * One call, from its first attempt to its answer or its last error. Every attempt is routed by
 * {@link routeCall} (room for its admission charge, tiers, fallbacks, the deployments it already
 * tried); when no deployment has room the call waits in the queue or fails at once with the
 * SDK's `RateLimitError`, and failover retries the rest. A pinned call ({@link Pin}) goes to its
 * deployment alone, when that has room for it.
 *
 * A call runs on every request, so its state is one object and its steps are methods: the
 * dispatch is the outcome of its first attempt, and a call that succeeds at once makes no
 * closure and no promise besides the one its caller gets. Failover builds its pipeline only
 * after a failure.
 *
 * @example
 * ```ts
 * const answer = await new Dispatch(shared, { adapter, op, request, sessionId: 'user-42', pool }).run();
 * ```
 */
export class Dispatch implements AttemptOutcome, CallGate, RouteQuery {
  readonly model: string;
  /**
   * The model the call is routed to as its own, with its deployments and fallbacks: the requested
   * one, until a refusal no deployment of it would lift (a prompt beyond its context window,
   * Azure's content filter) moved the call on ({@link leaveModel}).
   */
  target: string;
  targetPool: readonly Deployment[];
  targetFallbacks: readonly string[] | undefined;
  /** Why the call left the requested model; undefined while it has not. */
  private refusal: Refusal | undefined = undefined;
  /** The models that refused the call (made on the first refusal). */
  private refusedBy: Set<string> | undefined = undefined;
  /**
   * The charge the call must find room for; `undefined` for calls that use no quota (room =
   * healthy). A batch call's carries the headroom it leaves while interactive traffic is present.
   */
  admission: Admission | undefined;
  /** The deployments this call already tried (made on its second attempt). */
  exclude: Set<Deployment> | undefined = undefined;
  private last: Route | undefined = undefined;
  /** The clock's reading for the routing under way: every deployment's room is asked at it. */
  now = 0;
  private context: AttemptContext = FIRST_ATTEMPT;
  private resolveCall: (answer: Answer) => void = noop;
  private rejectCall: (error: unknown) => void = noop;

  private readonly adapter: ApiAdapter;
  private readonly op: ApiOperation;
  readonly request: PreparedRequest;
  readonly options: SdkRequestOptions | undefined;
  readonly sessionId: string | undefined;
  readonly pool: readonly Deployment[];
  private readonly fallbacks: readonly string[] | undefined;
  private readonly pin: Pin | undefined;
  readonly tags: CallTags;
  readonly required: TagSet | undefined;
  private readonly filterFallbacks: readonly string[] | undefined;
  private readonly skipped: readonly SkippedFallback[] | undefined;

  constructor(
    readonly shared: DispatchShared,
    call: DispatchCall,
  ) {
    const { request, pin, fallbacks, pool } = call;
    this.adapter = call.adapter;
    this.op = call.op;
    this.request = request;
    this.options = call.options;
    this.sessionId = call.sessionId;
    this.pool = pool;
    this.fallbacks = fallbacks;
    this.pin = pin;
    this.tags = call.tags ?? UNTAGGED;
    this.required = call.required;
    this.filterFallbacks = call.filterFallbacks;
    this.skipped = call.skipped;
    // A call without a model (a retrieval) is pinned, and its model is never asked for.
    this.model = (pin !== undefined ? pin.model : request.body.model) as string;
    this.admission = request.metered ? request.admission : undefined;
    this.target = this.model;
    this.targetPool = pool;
    this.targetFallbacks = fallbacks;
    // Only a recorded call carries its arrival and tags to its attempts.
    if (shared.traffic !== undefined) {
      this.context = {
        attempt: 1,
        call: { t: shared.clock(), lane: this.tags.lane, tenant: this.tags.tenant },
      };
    }
  }

  /**
   * The call leaves the model it is routed to, for `reason`, and goes to `models` (in order,
   * the first with room): no other deployment of the model it leaves is tried, and none is
   * marked down, since each would refuse it alike.
   */
  leaveModel(reason: Refusal, models: readonly string[]): void {
    (this.refusedBy ??= new Set()).add(this.target);
    this.refusal = reason;
    this.target = models[0]!;
    this.targetPool = this.shared.registry.poolFor(this.target, this.required);
    this.targetFallbacks = models.length > 1 ? models.slice(1) : undefined;
  }

  /** Starts the call; the promise settles with its answer, or the error its caller sees. */
  run(): Promise<Answer> {
    const call = promiseOf(this);
    try {
      this.begin(this);
    } catch (error) {
      this.rejectCall(error);
    }
    return call;
  }

  /** @internal The resolving functions of the call's promise (see {@link openCall}). */
  settlesWith(resolve: (answer: Answer) => void, reject: (error: unknown) => void): void {
    this.resolveCall = resolve;
    this.rejectCall = reject;
  }

  /** The first attempt answered. */
  resolve(answer: Answer): void {
    // An answer the content filter withheld, when another model may give it.
    if (this.filterFallbacks !== undefined && isFilteredAnswer(answer.data)) {
      if (this.movedOn('content_filter')) return;
    }
    this.resolveCall(answer);
  }

  /** The first attempt failed: failover, when allowed, has the rest of the call. */
  reject(error: Error): void {
    if (this.refusedHere(error)) return;
    const policy = this.shared.policy;
    if (policy.attempts <= 1 || this.pin !== undefined) {
      this.fail(error);
      return;
    }
    try {
      failover(
        error,
        () => this.again(),
        policy,
        this.errors,
        this.options?.signal,
        (n, _d, why) => {
          this.context = { attempt: n, failoverReason: why, call: this.context.call };
          const last = this.last;
          if (last) this.shared.metrics.retry(last.deployment.models.get(last.model)!, why);
        },
      ).then(
        (answer) => this.resolve(answer),
        (final: unknown) => {
          if (!this.refusedHere(final)) this.fail(final);
        },
      );
    } catch (thrown) {
      // A caller's retryIf that throws ends the call with what it threw.
      this.fail(thrown);
    }
  }

  get errors(): ProviderErrors {
    // Tags may leave the call's own model no deployment (a fallback has one).
    return (this.pool[0] ?? this.shared.registry.poolFor(this.model)[0]!).errors;
  }

  /**
   * A refusal of the model the call is routed to (see {@link refusalOf}) that a fallback may not
   * share: the call moves on and a new attempt starts. False when there is nowhere to go.
   */
  private refusedHere(error: unknown): boolean {
    if (this.pin !== undefined) return false;
    const refusal = refusalOf(error, this.errors);
    return refusal !== undefined && this.movedOn(refusal);
  }

  /** Moves the call to the next models that may take it despite `refusal`, and sends it. */
  private movedOn(refusal: Refusal): boolean {
    const list = refusal === 'content_filter' ? this.filterFallbacks : this.fallbacks;
    if (list === undefined) return false;
    const refused = this.refusedBy;
    const windows = this.shared.windows;
    const need = tokensNeeded(this.request.admission);
    const next = list.filter(
      (m) =>
        m !== this.target &&
        m !== this.model &&
        !(refused?.has(m) ?? false) &&
        (refusal !== 'context_window' || fits(windows, m, need)),
    );
    if (next.length === 0) return false;
    this.leaveModel(refusal, next);
    this.begin(this);
    return true;
  }

  /** A further attempt, for failover. */
  private again(): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => this.begin({ resolve, reject }));
  }

  private fail(error: unknown): void {
    // The caller's own abort is not a call that failed; a call without a model is no model's.
    if (this.model !== undefined && classify(error, this.errors).reason !== 'aborted') {
      this.shared.countFailure(this.model, error);
      if (this.required !== undefined && refusedForTags(error)) {
        this.shared.metrics.refusedForTags(this.model);
      }
    }
    this.shared.traffic?.failed(
      this.model,
      this.request,
      this.context.call,
      this.last?.deployment,
      error,
    );
    // The switchboard's own refusal says which fallbacks the call could not be translated for.
    const skipped = this.skipped;
    if (skipped !== undefined && (isNoRoom(error) || error instanceof SwitchboardError)) {
      (error as Error).message += skippedSentence(skipped);
    }
    this.rejectCall(error);
  }

  /**
   * Routes one attempt and sends it, or waits for room; `outcome` hears how it ends. A budgeted
   * call first holds what this attempt may be billed at the dearest model it may go to.
   */
  private begin(outcome: AttemptOutcome): void {
    const account = this.request.account;
    if (account !== undefined) {
      const models = this.pin !== undefined ? [this.model] : this.targets();
      const gap = account.cover(models, this.request.admission, this.errors.RateLimitError);
      if (gap !== undefined) {
        gap.then(
          () => this.place(outcome),
          (error: Error) => outcome.reject(error),
        );
        return;
      }
    }
    this.place(outcome);
  }

  /** The models the next attempt may go to: its target, then the target's fallbacks. */
  private targets(): readonly string[] {
    const rest = this.targetFallbacks;
    return rest === undefined ? [this.target] : [this.target, ...rest];
  }

  /** Routes one attempt and sends it, or waits for room. */
  private place(outcome: AttemptOutcome): void {
    let routed: Route | NoRoom;
    try {
      const queue = this.shared.queue;
      // Nobody overtakes a call waiting for room in its own lane, and a batch call none at all;
      // an interactive call may go past waiting batch calls when there is room for it.
      routed =
        this.pin !== undefined
          ? this.pinned(this.pin)
          : queue !== undefined &&
              queue.length(this.model, this.tags.lane === 'batch' ? undefined : 'interactive') > 0
            ? QUEUED
            : this.route();
    } catch (error) {
      outcome.reject(error as Error);
      return;
    }
    if ('deployment' in routed) {
      // Routed now: the clock's reading of the routing still holds.
      this.send(routed, outcome, this.pin === undefined ? this.now : undefined);
      return;
    }
    waitForRoom(this, routed, routed === QUEUED).then(
      (to) => this.send(to, outcome),
      (error: Error) => outcome.reject(error),
    );
  }

  route(): Route | NoRoom {
    if (this.pin !== undefined) return this.pinned(this.pin);
    const last = this.last;
    // Most calls take one attempt: the set of tried deployments is made on the second.
    if (last !== undefined) (this.exclude ??= new Set()).add(last.deployment);
    if (this.tags.lane === 'batch' && this.request.metered) {
      this.admission = this.shared.lanes.admissionFor(this.model, 'batch', this.request.admission);
    }
    this.now = this.shared.clock();
    return routeCall(this.shared.picker, this);
  }

  /** As a gate: room for the call's charge on a deployment it has not tried. */
  admits(state: ModelState, deployment: Deployment): boolean {
    return hasRoom(state, this.admission, this.now) && !(this.exclude?.has(deployment) ?? false);
  }

  /** {@link admits} from a model's hot row, while the call has tried no deployment yet. */
  admitsRow(table: Float64Array, row: number, now: number): number {
    return this.exclude === undefined ? keptRoom(table, row, this.admission, now) : -1;
  }

  /**
   * The pinned deployment, when it has room for the call; with a queue, when it is only out of
   * quota room (a window to end, a replica's lease on its way), how long until it has some: the
   * call waits for this deployment.
   */
  private pinned(pin: Pin): Route | NoRoom {
    const { deployment: d, modelState: state, model, id } = pin;
    const calls = state.inFlight;
    if (model !== undefined && (!state.hasRoom(this.request.admission) || !calls.hasRoom())) {
      const wait = state.roomAt(this.request.admission);
      if (
        this.shared.queue !== undefined &&
        calls.hasRoom() &&
        !state.isCooling() &&
        wait < Infinity
      ) {
        return { waitMs: wait };
      }
      const why = state.isCooling()
        ? `is cooling down for ${Math.ceil(state.cooldownRemaining / 1000)} s`
        : calls.hasRoom()
          ? 'is at its quota'
          : `has ${calls.count} calls in flight (maxInFlight ${calls.cap})`;
      throw new SwitchboardError(
        `${clip(id)} lives on deployment ${d.name}, which ${why} for ${model}: retry later, or start without previous_response_id`,
      );
    }
    if (this.sessionId !== undefined) this.shared.registry.sessions.set(this.sessionId, d.name);
    return { deployment: d, model: this.model };
  }

  /**
   * One attempt on a route; a fallback's replaces the params' `model` for this attempt only.
   * `now` is the clock's reading when the route was taken in this same turn.
   */
  private send(to: Route, outcome: AttemptOutcome, now?: number): void {
    const { shared, request, model } = this;
    const { deployment } = to;
    try {
      if (this.last === undefined) shared.metrics.lanes?.admitted(model, this.tags);
      this.last = to;
      if (this.tags.lane === 'interactive') shared.lanes.sent(model, now);
      if (this.sessionId !== undefined) {
        shared.state.rememberSession?.(this.sessionId, deployment.name);
      }
      let hooks = shared.hooks;
      let prepared = request;
      if (to.model !== model) {
        const refusal = this.refusal;
        shared.logger.debug?.(
          refusal === undefined
            ? `No deployment of ${model} can take the call: falling back to ${to.model} on ${deployment.name}`
            : `${model} cannot take the call (${refusal}): falling back to ${to.model} on ${deployment.name}`,
        );
        const metrics = shared.metrics;
        const reason = refusal ?? 'unavailable';
        const translated = deployment.provider !== this.adapter.provider;
        hooks = { ...hooks, sent: (s) => metrics.request(s, model, reason, translated) };
        prepared = { ...request, body: { ...request.body, model: to.model } };
      }
      const state = this.pin?.modelState ?? deployment.models.get(to.model)!;
      if (deployment.provider !== this.adapter.provider) {
        this.sendTranslated(to, state, request, hooks, outcome);
        return;
      }
      const { adapter, op, options } = this;
      runAttempt(
        { deployment, modelState: state, adapter, op, request: prepared, options },
        hooks,
        outcome,
        this.context,
      );
    } catch (error) {
      // Nothing above calls `outcome` and then throws: it hears of this once.
      outcome.reject(error as Error);
    }
  }

  /**
   * An attempt on a deployment of the other vendor: the call translated into its API, admitted and
   * priced there, its answer translated back (see {@link crossVendor}).
   */
  private sendTranslated(
    to: Route,
    state: ModelState,
    request: PreparedRequest,
    hooks: AttemptHooks,
    outcome: AttemptOutcome,
  ): void {
    const { adapter, op } = this;
    // An operation the adapter does not list is sb.fetch's relay of a create call.
    const opName =
      Object.keys(adapter.operations).find((k) => adapter.operations[k] === op) ?? 'fetch';
    // A deployment of the caller's own provider: its SDK's stream class and error classes.
    const own = [...this.shared.registry.deployments.values()].find(
      (d) => d.provider === adapter.provider,
    )!;
    const crossing = crossVendor(
      { adapter, opName, op, request, deployment: own },
      {
        deployment: to.deployment,
        model: to.model,
        maxTokens: maxOutputOf(to.model, state.quota.outputReservation),
        clock: this.shared.clock,
      },
      outcome,
    );
    if (crossing === undefined) {
      throw new SwitchboardError(
        `${this.model}'s call cannot be translated for ${to.model}: it was not sent`,
      );
    }
    const { adapter: target, op: targetOp, request: translated, outcome: back } = crossing;
    runAttempt(
      {
        deployment: to.deployment,
        modelState: state,
        adapter: target,
        op: targetOp,
        request: translated,
        options: this.options,
      },
      hooks,
      back,
      this.context,
    );
  }

  /** Why each deployment of the call's model and fallbacks did not take it (on failure only). */
  explain(): DeploymentExplanation[] {
    return explain(this.shared.registry, {
      model: this.model,
      fallbacks: this.fallbacks,
      tags: this.required,
      admission: this.admission,
      tried: this.exclude,
    });
  }
}

function noop(): void {}

/** The switchboard refused the call, and some deployment it passed over lacked the call's tags. */
function refusedForTags(error: unknown): boolean {
  const list = (error as { explanations?: unknown } | null)?.explanations;
  return Array.isArray(list) && list.some((e) => (e as { reason?: unknown }).reason === 'tags');
}

/** The dispatch whose promise is being made: an executor runs at once, so one serves every call. */
let opening: Dispatch | undefined;

/** A new promise settled by `dispatch`, without a closure of its own. */
function promiseOf(dispatch: Dispatch): Promise<Answer> {
  opening = dispatch;
  const call = new Promise<Answer>(openCall);
  opening = undefined;
  return call;
}

function openCall(resolve: (answer: Answer) => void, reject: (error: unknown) => void): void {
  opening!.settlesWith(resolve, reject);
}

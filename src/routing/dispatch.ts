import { classify } from '../failover/classify';
import { failover } from '../failover/failover';
import { isFilteredAnswer, refusalOf, type Refusal } from '../failover/refusals';
import type { ApiAdapter, ApiOperation } from '../providers/adapter';
import type { AttemptOutcome, PreparedRequest } from '../providers/attempt-types';
import type { SettledCall } from '../providers/call-promise';
import { UNTAGGED, type CallTags } from '../scheduling/lanes';
import { keptRoom } from '../quota/hot-row';
import type { Answer, Deployment, ProviderErrors, SdkRequestOptions } from '../registry/deployment';
import type { ModelState } from '../registry/model-state';
import { hasRoom, type CallGate } from '../selection/pick';
import { SwitchboardError } from '../switchboard.error';
import type { Admission } from '../quota/admission';
import type { AttemptContext } from '../telemetry/gen-ai-telemetry';
import { fits, tokensNeeded } from './context-windows';
import { routeCall, type NoRoom, type Route, type RouteQuery } from './route-call';
import { explain, refusedForTags } from './explanations';
import { waitForRoom } from './wait-for-room';
import type { DeploymentExplanation } from '../errors/explanation';
import type { TagSet } from '../placement/tags';
import { isNoRoom } from '../quota/no-room';
import { skippedSentence, type SkippedFallback } from '../translate/fallback-choice';
import type { DispatchCall, DispatchShared, Pin } from './dispatch-call';
import { ModelMove } from './model-move';
import { pinnedRoute } from './pinned-route';
import { sendAttempt, type SendingCall } from './send-attempt';
import { keepShape } from '../runtime/kept-shapes';

const FIRST_ATTEMPT: AttemptContext = Object.freeze({ attempt: 1 });
/** Stands for "others are already waiting for room": no routing is tried. */
const QUEUED: NoRoom = Object.freeze({ waitMs: 0 });

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
export class Dispatch implements AttemptOutcome, CallGate, RouteQuery, SendingCall {
  readonly model: string;
  /** Where refusals moved the call ({@link leaveModel}); undefined while it keeps to its model. */
  private moved: ModelMove | undefined = undefined;
  /**
   * The charge the call must find room for; `undefined` for calls that use no quota (room =
   * healthy). A batch call's carries the headroom it leaves while interactive traffic is present.
   */
  admission: Admission | undefined;
  /** The deployments this call already tried (made on its second attempt). */
  exclude: Set<Deployment> | undefined = undefined;
  /** The route of the call's latest attempt. */
  last: Route | undefined = undefined;
  /** The clock's reading for the routing under way: every deployment's room is asked at it. */
  now = 0;
  context: AttemptContext = FIRST_ATTEMPT;
  private resolveCall: (value: unknown) => void = noop;
  private rejectCall: (error: unknown) => void = noop;
  /** Its promise is resolved with the answer's data (the caller's own) or the answer; kept. */
  private withData = false;
  answer: Answer | undefined = undefined;

  readonly adapter: ApiAdapter;
  readonly op: ApiOperation;
  readonly request: PreparedRequest;
  readonly options: SdkRequestOptions | undefined;
  readonly sessionId: string | undefined;
  readonly pool: readonly Deployment[];
  private readonly fallbacks: readonly string[] | undefined;
  readonly pin: Pin | undefined;
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
    const pool = this.shared.registry.poolFor(models[0]!, this.required);
    (this.moved ??= new ModelMove(this.model)).to(reason, models, pool);
  }

  /**
   * The model the call is routed to as its own, with its deployments and fallbacks: the requested
   * one, until a refusal no deployment of it would lift (a prompt beyond its context window,
   * Azure's content filter) moved the call on ({@link leaveModel}).
   */
  get target(): string {
    return this.moved === undefined ? this.model : this.moved.target;
  }

  get targetPool(): readonly Deployment[] {
    return this.moved === undefined ? this.pool : this.moved.pool;
  }

  get targetFallbacks(): readonly string[] | undefined {
    return this.moved === undefined ? this.fallbacks : this.moved.fallbacks;
  }

  /** Why the call left the requested model; undefined while it has not. */
  get refusal(): Refusal | undefined {
    return this.moved?.refusal;
  }

  /** Starts the call; the promise settles with its answer, or the error its caller sees. */
  run(): Promise<Answer> {
    const call = promiseOf(this);
    this.start();
    return call;
  }

  /**
   * Starts the call, settling the promise `open` makes of it (the caller's own, see
   * `CallEntry.open`): the call then makes one promise, not its own and one over it.
   */
  open(open: (call: SettledCall) => Promise<Answer>): Promise<Answer> {
    const call = open(this);
    this.start();
    return call;
  }

  private start(): void {
    try {
      this.begin(this);
    } catch (error) {
      this.request.account?.end(error);
      this.rejectCall(error);
    }
  }

  /** @internal The resolving functions of the caller's own promise, of the data (`SettledCall`). */
  settlesWith(resolveData: (data: unknown) => void, reject: (error: unknown) => void): void {
    this.settlesAnswer(resolveData, reject);
    this.withData = true;
  }

  /** @internal The resolving functions of the call's promise (see {@link promiseOf}). */
  settlesAnswer(resolve: (answer: Answer) => void, reject: (error: unknown) => void): void {
    this.resolveCall = resolve as (value: unknown) => void;
    this.rejectCall = reject;
  }

  /** The first attempt answered. */
  resolve(answer: Answer): void {
    if (!shapeKept) shapeKept = keepShape(dispatchOfStandIns);
    // An answer the content filter withheld, when another model may give it.
    if (this.filterFallbacks !== undefined && isFilteredAnswer(answer.data)) {
      if (this.movedOn('content_filter')) return;
    }
    this.answer = answer;
    this.resolveCall(this.withData ? answer.data : answer);
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
      failover(error, {
        next: () => this.again(),
        policy,
        errors: this.errors,
        signal: this.options?.signal,
        onRetry: (n, _d, why) => {
          this.context = { attempt: n, failoverReason: why, call: this.context.call };
          const last = this.last;
          if (last) this.shared.metrics.retry(last.deployment.models.get(last.model)!, why);
        },
      }).then(
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
    const refused = this.moved?.refusedBy;
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
    const last = this.last?.deployment;
    this.shared.traffic?.failed(this.model, this.request, this.context.call, last, error);
    // The switchboard's own refusal says which fallbacks the call could not be translated for.
    const skipped = this.skipped;
    if (skipped !== undefined && (isNoRoom(error) || error instanceof SwitchboardError)) {
      (error as Error).message += skippedSentence(skipped);
    }
    // A tenant's charge not spent goes back (before the caller hears, as a retry may come at once).
    this.request.account?.end(error);
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
          ? pinnedRoute(this, this.pin)
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
      sendAttempt(this, routed, outcome, this.pin === undefined ? this.now : undefined);
      return;
    }
    waitForRoom(this, routed, routed === QUEUED).then(
      (to) => sendAttempt(this, to, outcome),
      (error: Error) => outcome.reject(error),
    );
  }

  route(): Route | NoRoom {
    if (this.pin !== undefined) return pinnedRoute(this, this.pin);
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

/** Whether a dispatch of stand-ins is kept for its class's shape (see `keepShape`). */
let shapeKept = false;

/** A dispatch of no switchboard and no call, kept for its class's shape after a first call ran. */
function dispatchOfStandIns(): Dispatch {
  const request = { body: {}, stream: false, admission: undefined, metered: false };
  const call = { request, pool: [] } as unknown as DispatchCall;
  return new Dispatch({ traffic: undefined } as unknown as DispatchShared, call);
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
  opening!.settlesAnswer(resolve, reject);
}

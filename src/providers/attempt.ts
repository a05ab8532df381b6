import { classify } from '../failover/classify';
import { firstTokenTimeoutError } from '../failover/first-token-timeout';
import { isStaleSocket } from '../failover/stale-socket';
import type { TokenUsage as Usage } from '../quota/admission';
import type { Deployment, SdkRequestOptions } from '../registry/deployment';
import type { ModelState } from '../registry/model-state';
import type { DeadlineEntry, DeadlineList } from '../runtime/deadlines';
import type { AttemptContext, AttemptTrace } from '../telemetry/gen-ai-telemetry';
import { accountedStream, type StreamStart } from './accounted-stream';
import type { ApiAdapter, ApiPromiseLike } from './adapter';
import { HEAD_CAME, HOLDING, LISTENING, RESENT, SETTLED, TIMED_OUT } from './attempt-flags';
import { Answered } from './answered';
import type { AttemptCall, AttemptHooks, AttemptOutcome, PreparedRequest } from './attempt-types';
import { readRefusal, weighFailure } from './attempt-failure';
import { checkedUsage, costUsage } from './attempt-usage';
import { apiPromiseOf, needsController, sdkOptionsOf } from './attempt-options';
import { noAnswer } from './no-answer';
import { keepShape } from '../runtime/kept-shapes';
import { ATTEMPT_STAND_INS, deadlineListOfStandIns, keepAnswered } from './kept-shapes';
import { translate } from './translate-error';

/**
 * One request to one deployment, with its accounting:
 * - before anything is awaited, 1 request and the admission charge are spent, so concurrent
 *   calls see them;
 * - the answer's usage settles the charge the way the upstream does (for streams, when the
 *   stream ends); a failure before anything was produced releases it, the request stays counted;
 * - the headers of the answer (or of the error) go to `hooks.observed`, for anchoring;
 * - the deadline is the switchboard's own, so a timeout is always reported as the SDK's
 *   `APIConnectionTimeoutError`, whatever the SDK made of the abort;
 * - a stream with a `firstTokenTimeout` is the caller's once its first event came (not at its
 *   headers): until then the attempt may still fail, and its call fail over; when the deadline
 *   passes first, the request is aborted (the upstream sees the connection close), its charge
 *   released, its request counted, and the deployment not cooled (slow says nothing certain);
 * - a request lost to a stale pooled socket ({@link isStaleSocket}) is sent once more at once, on
 *   the same deployment and within the same deadline, without a mark-down: the first error is not
 *   the deployment's fault; whatever the second send does follows the usual rules;
 * - a failure is classified, and the model marked down where the design says so.
 *
 * It has no promise of its own: the outcome goes to `outcome`. A call's dispatch is the outcome
 * of its first attempt, so a call that succeeds at once makes one promise, its caller's.
 *
 * @example
 * ```ts
 * runAttempt(dispatch, deployment, deployment.models.get('gpt-4o')!, hooks, { resolve, reject });
 * ```
 */
export function runAttempt(
  call: AttemptCall,
  deployment: Deployment,
  modelState: ModelState,
  hooks: AttemptHooks,
  outcome: AttemptOutcome,
): void {
  new Attempt(call, deployment, modelState, hooks, outcome).start(call.context);
}

/**
 * The state of one attempt, in one object: an attempt runs on every call, so its parts are methods
 * and fields, and it waits for its deadline in a shared {@link Deadlines} list, not a timer.
 */
class Attempt implements DeadlineEntry, EventListenerObject {
  private readonly deadline: number;
  /** ms from send to the first event of a stream (0: no such deadline, or not a stream). */
  private readonly firstToken: number;
  readonly caller: AbortSignal | undefined;
  /** Stands between the caller's signal and the SDK (which never removes the listener it adds). */
  private readonly controller: AbortController | undefined;
  private readonly sdkOptions: SdkRequestOptions | undefined;
  trace: AttemptTrace | undefined;
  deadlineList: DeadlineList | undefined = undefined;
  deadlineAt = 0;
  deadlinePrev: DeadlineEntry | undefined = undefined;
  deadlineNext: DeadlineEntry | undefined = undefined;
  /**
   * What has happened to it, as bits ({@link SETTLED} and the rest): one field of an attempt made
   * for every call, not five.
   */
  private flags = 0;
  /** When it was sent (epoch ms), for the model's latency; a metered call's, when it was charged. */
  startedAt = 0;
  /** The SDK's promise of the request in flight, and its response once the head came. */
  private sent: ApiPromiseLike<unknown> | undefined = undefined;
  private response: Response | undefined = undefined;
  /** A stream whose first event is awaited under a first-token deadline. */
  private stream: { controller?: AbortController } | undefined = undefined;
  /** The SDK's controller once the head came (its timer is cleared): stops the body, the socket. */
  private bodyReader: AbortController | undefined = undefined;
  // The request's promises' handlers (a stale socket's second send's too), bound once: 56 bytes
  // less than two closures and their context. Whatever one throws settles the call ({@link broke}).
  private readonly onValue: (value: unknown) => void;
  private readonly onFailure: (error: unknown) => void;

  constructor(
    private readonly call: AttemptCall,
    readonly deployment: Deployment,
    readonly modelState: ModelState,
    readonly hooks: AttemptHooks,
    private readonly outcome: AttemptOutcome,
  ) {
    const { request, options } = call;
    this.onValue = this.headOrData.bind(this);
    this.onFailure = this.notSent.bind(this);
    this.deadline = options?.timeout ?? deployment.timeout;
    this.firstToken = request.stream
      ? modelState.firstTokenTimeout || hooks.firstTokenTimeout || 0
      : 0;
    const caller = options?.signal ?? undefined;
    this.caller = caller;
    this.controller = needsController(caller, this.firstToken);
    this.sdkOptions = sdkOptionsOf(options, this.deadline, this.controller);
  }

  get adapter(): ApiAdapter {
    return this.call.adapter;
  }

  get request(): PreparedRequest {
    return this.call.request;
  }

  /** When the admission was charged (undefined: unmetered). */
  get sentAt(): number | undefined {
    return this.request.metered ? this.startedAt : undefined;
  }

  start(context: AttemptContext): void {
    const { modelState: state, request } = this;
    this.startedAt = request.metered ? state.admit(request.admission) : state.latency.now();
    state.inFlight.start();
    this.flags = HOLDING;
    this.hooks.sent(state);
    this.trace = this.hooks.started?.(this.deployment, state, request, context, this.adapter.name);
    const caller = this.caller;
    if (caller) {
      const controller = this.controller!;
      if (caller.aborted) controller.abort();
      else {
        caller.addEventListener('abort', this, { once: true });
        this.flags |= LISTENING;
      }
    }
    // A stream's first-token deadline stands in for the call's: the SDK's own timer still ends a
    // request whose headers never come.
    this.hooks.deadlines.add(this, this.firstToken || this.deadline);
    this.send();
  }

  /** The caller's signal aborted: so does the request (the attempt listens to the signal). */
  handleEvent(): void {
    this.flags &= ~LISTENING;
    this.controller!.abort();
  }

  /** The deadline passed: abort the request (when a signal stands in), else settle as failed. */
  expire(): void {
    if (this.firstToken !== 0) {
      this.noFirstEvent();
      return;
    }
    this.flags |= TIMED_OUT;
    // A body still arriving past the deadline (an upstream that trickles it) is read no further:
    // its socket closes now, not when the upstream ends it.
    this.bodyReader?.abort();
    if (this.controller) this.controller.abort();
    else if (!this.settle()) {
      this.release();
      // Nothing was produced: the charge goes back, the request stays counted.
      try {
        this.outcome.reject(this.fail(undefined, false));
      } catch (bug) {
        this.broke(bug);
      }
    }
  }

  /** Runs `step` with `value`: whatever it throws settles the call ({@link broke}). */
  private guarded<T>(step: (this: Attempt, value: T) => void, value: T): void {
    try {
      step.call(this, value);
    } catch (bug) {
      this.broke(bug);
    }
  }

  /**
   * A step of this attempt threw where no promise would catch it (a handler of the SDK's
   * promises, the deadline's timer): the call fails with that error, and the process lives on.
   */
  private broke(bug: unknown): void {
    if (!this.settle()) this.release();
    this.outcome.reject(bug instanceof Error ? bug : new Error(String(bug)));
  }

  /** Marks it settled; returns whether it already was. */
  private settle(): boolean {
    const was = (this.flags & SETTLED) !== 0;
    this.flags |= SETTLED;
    return was;
  }

  private send(): void {
    this.flags &= ~HEAD_CAME;
    try {
      const sent = apiPromiseOf(
        this.call.op.send(this.deployment.client, this.request.body, this.sdkOptions),
        this.adapter,
      );
      this.sent = sent;
      // The SDK's APIPromise holds the promise of the response's head (`asResponse()` is a
      // `then` over it): waited on directly, the head costs one promise instead of two.
      const head = (sent as { responsePromise?: unknown }).responsePromise;
      if (head instanceof Promise) {
        (head as Promise<{ response: Response }>).then(this.onValue, this.onFailure);
      } else {
        sent.asResponse().then((response) => {
          this.flags |= HEAD_CAME;
          this.responded(response);
        }, this.onFailure);
      }
    } catch (error) {
      this.release();
      this.settle();
      this.outcome.reject(this.fail(error, false));
    }
  }

  /** What the request's promises gave: its head, then its data. */
  private headOrData(value: unknown): void {
    if ((this.flags & HEAD_CAME) !== 0) {
      this.guarded(this.received, value);
      return;
    }
    this.flags |= HEAD_CAME;
    const props = value as { response: Response; controller?: AbortController };
    this.bodyReader = props.controller;
    this.guarded(this.responded, props.response);
  }

  private notSent(error: unknown): void {
    this.guarded(this.failedToSend, error);
  }

  /** The response's head came: its data (the parsed JSON, or the SDK's stream) follows. */
  private responded(response: Response): void {
    this.response = response;
    this.sent!.then(this.onValue, this.onFailure);
  }

  private received(data: unknown): void {
    const missing = this.request.stream ? undefined : noAnswer(data, this.response);
    if (missing !== undefined) return this.failedToSend(missing);
    let answer: unknown;
    const { op } = this.call;
    try {
      answer = op.data ? op.data(data, this.request.body, this.deployment.client) : data;
    } catch (error) {
      this.failedToSend(error);
      return;
    }
    this.answered(answer, this.response!);
  }

  private answered(data: unknown, response: Response): void {
    if (!shapeKept) shapeKept = keepShape(standInAttempt) && keepShape(deadlineListOfStandIns);
    const { modelState: state, request } = this;
    if (!request.stream) keepAnswered(this.sent);
    if ((this.flags & SETTLED) !== 0) {
      // Timed out just before the headers came: close the stream nobody will read.
      if (request.stream) (data as { controller?: AbortController }).controller?.abort();
      return;
    }
    if (this.firstToken !== 0) {
      this.hooks.observed(state, response.headers, request.admission, this.sentAt);
      this.awaitFirstEvent(data, response);
      return;
    }
    this.settle();
    this.hooks.observed(state, response.headers, request.admission, this.sentAt);
    if (request.stream) {
      this.hooks.deadlines.remove(this);
      this.outcome.resolve(new Answered(accountedStream(this, data), response));
      return;
    }
    this.release();
    if (request.metered) {
      const usage = checkedUsage(this, this.adapter.usage(data));
      state.answered(request.admission, usage, this.startedAt);
      if (request.account !== undefined) costUsage(this, usage);
    }
    state.recordSuccess();
    this.trace?.response(data);
    request.track?.seen(data, request.body, this.deployment, this.adapter);
    this.outcome.resolve(new Answered(data, response));
  }

  /**
   * A stream's headers came under a first-token deadline: its first event is read here, and the
   * stream is the caller's only once that came. Its iterator is taken once (the SDK's streams
   * can be iterated only once) and handed on with the event.
   */
  private awaitFirstEvent(data: unknown, response: Response): void {
    const stream = data as AsyncIterable<unknown> & { controller?: AbortController };
    this.stream = stream;
    let iterator: AsyncIterator<unknown>;
    try {
      iterator = stream[Symbol.asyncIterator]();
    } catch (error) {
      this.brokeBeforeFirstEvent(error);
      return;
    }
    iterator.next().then(
      (first) => {
        if (this.settle()) return;
        this.hooks.deadlines.remove(this);
        if (!first.done) this.modelState.latency.firstEvent(this.startedAt);
        const start: StreamStart = { iterator, first };
        this.outcome.resolve(new Answered(accountedStream(this, data, start), response));
      },
      (error: unknown) => this.brokeBeforeFirstEvent(error),
    );
  }

  /** The stream broke before its first event: nothing was delivered, so the call may fail over. */
  private brokeBeforeFirstEvent(error: unknown): void {
    if (this.settle()) return;
    this.release();
    // The upstream admitted it (its headers came): its charge stands, as for a stream cut short.
    this.outcome.reject(this.fail(error, undefined));
  }

  /**
   * The first-token deadline passed with no event: the request is aborted, before or after its
   * headers, and the attempt fails as one that produced nothing.
   */
  private noFirstEvent(): void {
    if (this.settle()) return;
    this.controller!.abort();
    this.stream?.controller?.abort();
    this.release();
    const error = firstTokenTimeoutError(
      this.deployment.errors,
      this.deployment.name,
      this.firstToken,
    );
    this.outcome.reject(this.fail(error, false));
  }

  private failedToSend(error: unknown): void {
    if ((this.flags & SETTLED) !== 0) return;
    if (
      (this.flags & (RESENT | TIMED_OUT)) === 0 &&
      !this.caller?.aborted &&
      isStaleSocket(error)
    ) {
      this.flags |= RESENT;
      this.hooks.staleSocketRetried?.(this.modelState);
      this.send();
      return;
    }
    this.settle();
    this.release();
    // Nothing was produced: the charge goes back, the request stays counted.
    this.outcome.reject(this.fail(error, false));
  }

  /** The attempt is over (answered, failed, its stream ended): timer, listener and slot go. */
  release(): void {
    this.hooks.deadlines.remove(this);
    const flags = this.flags;
    if ((flags & LISTENING) !== 0) this.caller!.removeEventListener('abort', this);
    this.flags = flags & ~(LISTENING | HOLDING);
    if ((flags & HOLDING) !== 0) this.modelState.inFlight.end();
  }

  /**
   * Account a failure and turn it into the error the caller sees. `produced` other than false:
   * a stream broke off, so the upstream counted what it reported so far (undefined: nothing
   * reported, the admission charge stands).
   */
  fail(error: unknown, reported: Usage | undefined | false): Error {
    const { deployment, modelState: state, request } = this;
    const produced = reported === false ? false : checkedUsage(this, reported);
    readRefusal(this, error, produced === false);
    const translated = translate(deployment, error, this.caller, (this.flags & TIMED_OUT) !== 0);
    const verdict = classify(translated, deployment.errors, undefined, state.maxCooldown);
    if (request.metered && produced !== false) {
      state.settle(request.admission, produced);
      if (request.account !== undefined) costUsage(this, produced);
    }
    weighFailure(this, verdict);
    this.hooks.failed(state, verdict.reason);
    this.trace?.failed(translated, verdict.reason);
    return translated;
  }
}

/** Whether an attempt of stand-ins is kept for its class's shape (see `keepShape`). */
let shapeKept = false;
const standInAttempt = (): Attempt => new Attempt(...ATTEMPT_STAND_INS);

import {
  classify,
  isDroppedConnection,
  isMalformedResponse,
  type FailureReason,
} from '../failover/classify';
import type {
  Deployment,
  Operation,
  PreparedRequest,
  SdkRequestOptions,
} from '../registry/deployment';
import type { ModelState } from '../registry/model-state';
import { retryStaleSocket } from '../failover/stale-socket';
import type { AttemptContext, AttemptTrace } from '../telemetry/gen-ai-telemetry';

const FIRST_ATTEMPT: AttemptContext = Object.freeze({ attempt: 1 });

/** What an attempt reports back to its switchboard. */
export interface AttemptHooks {
  sent(state: ModelState): void;
  failed(state: ModelState, reason: FailureReason): void;
  /** A request lost to a stale pooled socket was sent again at once, on the same deployment. */
  staleSocketRetried?(state: ModelState): void;
  /** The attempt starts: its GenAI span and measurements, told how it ends. */
  started?(
    deployment: Deployment,
    state: ModelState,
    request: PreparedRequest,
    context: AttemptContext,
  ): AttemptTrace | undefined;
}

/**
 * One request to one deployment, with its accounting:
 * - before anything is awaited, 1 request and the preflight estimate are charged, so concurrent
 *   calls see them;
 * - the answer's real usage replaces the estimate (for streams, as usage events arrive);
 * - the deadline is the switchboard's own, so a timeout is always reported as the SDK's
 *   `APIConnectionTimeoutError`, whatever the SDK made of the abort;
 * - a request lost to a stale pooled socket is sent once more at once, on the same deployment,
 *   without a mark-down ({@link retryStaleSocket});
 * - a failure is classified, and the model marked down where the design says so.
 */
export function attempt(
  deployment: Deployment,
  state: ModelState,
  op: Operation,
  request: PreparedRequest,
  options: SdkRequestOptions | undefined,
  hooks: AttemptHooks,
  context: AttemptContext = FIRST_ATTEMPT,
): Promise<unknown> {
  state.spend(request.estimate, 1);
  hooks.sent(state);
  const trace = hooks.started?.(deployment, state, request, context);

  const deadline = options?.timeout ?? deployment.timeout;
  const caller = options?.signal ?? undefined;
  // A signal of our own stands between the caller's and the SDK (which never removes the listener
  // it adds). Without a caller's signal none is made: an AbortSignal costs more than all the rest
  // of an attempt. The SDK's timer (set to our deadline, and started after ours) then aborts the
  // request until its headers arrive, and our timer settles the call if its body still has not.
  const controller = caller ? new AbortController() : undefined;
  let timedOut = false;
  let settled = false;
  const onCallerAbort = () => controller!.abort();
  if (caller) {
    if (caller.aborted) controller!.abort();
    else caller.addEventListener('abort', onCallerAbort, { once: true });
  }
  // The clients are built with `maxRetries: 0` and the deployment's timeout: a call without
  // options sends none, as a direct SDK call would (per-request options cost the SDK headers).
  const sdkOptions = (
    controller
      ? { ...options, signal: controller.signal, timeout: deadline + 1000, maxRetries: 0 }
      : options === undefined
        ? undefined
        : { ...options, timeout: deadline, maxRetries: 0 }
  ) as SdkRequestOptions;

  const fail = (error: unknown, charged: number): Error => {
    const translated = translate(deployment, error, caller, timedOut);
    const verdict = classify(translated, deployment.errors);
    if (charged !== 0) state.spend(-charged);
    if (verdict.countsAsFailure) {
      if (state.recordFailure() >= 3) state.markDown(undefined, `3 consecutive failures`);
    }
    if (verdict.markDown !== undefined) {
      state.markDown(verdict.markDown === 'default' ? undefined : verdict.markDown, verdict.reason);
    }
    hooks.failed(state, verdict.reason);
    trace?.failed(translated, verdict.reason);
    return translated;
  };

  return new Promise<unknown>((resolve, reject) => {
    const timer = setTimeout(() => {
      timedOut = true;
      if (controller) controller.abort();
      else if (!settled) {
        settled = true;
        // Nothing was produced: the estimate goes back, the request stays counted.
        reject(fail(undefined, request.estimate));
      }
    }, deadline);
    const release = () => {
      clearTimeout(timer);
      if (caller) caller.removeEventListener('abort', onCallerAbort);
    };
    let sent: Promise<unknown>;
    try {
      sent = retryStaleSocket(
        () => deployment.send(op, request.body, sdkOptions),
        () => !settled && !timedOut && !caller?.aborted,
        () => hooks.staleSocketRetried?.(state),
      );
    } catch (error) {
      release();
      settled = true;
      reject(fail(error, request.estimate));
      return;
    }
    sent.then(
      (result) => {
        if (settled) {
          // Timed out just before the headers came: close the stream nobody will read.
          if (request.stream) (result as { controller?: AbortController }).controller?.abort();
          return;
        }
        settled = true;
        if (request.stream) {
          clearTimeout(timer);
          resolve(
            accountedStream(deployment, state, result, request, caller, release, fail, trace),
          );
          return;
        }
        release();
        const used = deployment.usageOf(result);
        if (used !== undefined && used !== request.estimate) state.spend(used - request.estimate);
        state.recordSuccess();
        trace?.response(result);
        resolve(result);
      },
      (error: unknown) => {
        if (settled) return;
        settled = true;
        release();
        // Nothing was produced: the estimate goes back, the request stays counted.
        reject(fail(error, request.estimate));
      },
    );
  });
}

/**
 * Wraps the SDK's stream in the SDK's own `Stream` class: usage is charged as events report it
 * (only the increase each time), the usage chunk the caller did not ask for is hidden, and a
 * dropped connection marks the model down and reaches the consumer as `APIConnectionError`.
 */
function accountedStream(
  deployment: Deployment,
  state: ModelState,
  source: unknown,
  request: PreparedRequest,
  caller: AbortSignal | undefined,
  release: () => void,
  fail: (error: unknown, charged: number) => Error,
  trace: AttemptTrace | undefined,
): unknown {
  const stream = source as AsyncIterable<unknown> & { controller: AbortController };
  let charged = request.estimate;
  const memo = { input: 0 };
  async function* iterate(): AsyncGenerator<unknown> {
    try {
      for await (const event of stream) {
        const total = deployment.streamUsage(event, memo);
        if (total !== undefined && total !== charged) {
          state.spend(total - charged);
          charged = total;
        }
        trace?.event(event);
        if (request.hideUsageChunk && deployment.isUsageChunk(event)) continue;
        yield event;
      }
      if (!caller?.aborted) state.recordSuccess();
    } catch (error) {
      // Tokens already streamed were spent upstream: keep them charged.
      throw fail(error, 0);
    } finally {
      release();
      // Ended by the source, or by a consumer that stopped reading: a success either way.
      trace?.streamEnded();
    }
  }
  return deployment.makeStream(() => iterate(), stream.controller);
}

/** Turn what the SDK or the runtime threw into the SDK error the caller should see. */
function translate(
  deployment: Deployment,
  error: unknown,
  caller: AbortSignal | undefined,
  timedOut: boolean,
): Error {
  const errors = deployment.errors;
  if (caller?.aborted) {
    return error instanceof errors.APIUserAbortError ? error : new errors.APIUserAbortError();
  }
  if (timedOut) {
    return error instanceof errors.APIConnectionTimeoutError
      ? error
      : new errors.APIConnectionTimeoutError({
          message: `Request to deployment ${deployment.name} timed out.`,
        });
  }
  if (isDroppedConnection(error) && !(error instanceof errors.APIError)) {
    return new errors.APIConnectionError({
      message: `Connection to deployment ${deployment.name} dropped.`,
      cause: error as Error,
    });
  }
  if (isMalformedResponse(error) && !(error instanceof errors.APIError)) {
    // A direct SDK call would throw the parser's SyntaxError; callers of the switchboard handle
    // the SDK's error classes only.
    const malformed = new errors.APIError(
      undefined,
      undefined,
      `Malformed response from deployment ${deployment.name}: ${(error as Error).message}`,
      undefined,
    );
    Object.defineProperty(malformed, 'cause', { value: error, configurable: true, writable: true });
    return malformed;
  }
  return error instanceof Error ? error : new Error(String(error));
}

import { classify, isDroppedConnection, type FailureReason } from '../failover/classify';
import type {
  Deployment,
  Operation,
  PreparedRequest,
  SdkRequestOptions,
} from '../registry/deployment';
import type { ModelState } from '../registry/model-state';

/** What an attempt reports back to its switchboard. */
export interface AttemptHooks {
  sent(state: ModelState): void;
  failed(state: ModelState, reason: FailureReason): void;
}

/**
 * One request to one deployment, with its accounting:
 * - before anything is awaited, 1 request and the preflight estimate are charged, so concurrent
 *   calls see them;
 * - the answer's real usage replaces the estimate (for streams, as usage events arrive);
 * - the deadline is enforced with the switchboard's own signal, so a timeout is always reported
 *   as the SDK's `APIConnectionTimeoutError`, whatever the SDK made of the abort;
 * - a failure is classified, and the model marked down where the design says so.
 */
export function attempt(
  deployment: Deployment,
  state: ModelState,
  op: Operation,
  request: PreparedRequest,
  options: SdkRequestOptions | undefined,
  hooks: AttemptHooks,
): Promise<unknown> {
  state.spend(request.estimate, 1);
  hooks.sent(state);

  const deadline = options?.timeout ?? deployment.timeout;
  const caller = options?.signal ?? undefined;
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, deadline);
  const onCallerAbort = () => controller.abort();
  if (caller) {
    if (caller.aborted) controller.abort();
    else caller.addEventListener('abort', onCallerAbort, { once: true });
  }
  const release = () => {
    clearTimeout(timer);
    caller?.removeEventListener('abort', onCallerAbort);
  };
  // The SDK's own timer is only a backstop: ours fires first and tells a timeout from an abort.
  const sdkOptions: SdkRequestOptions = {
    ...options,
    signal: controller.signal,
    timeout: deadline + 1000,
    maxRetries: 0,
  };

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
    return translated;
  };

  let sent: Promise<unknown>;
  try {
    sent = deployment.send(op, request.body, sdkOptions);
  } catch (error) {
    release();
    return Promise.reject(fail(error, request.estimate));
  }
  return sent.then(
    (result) => {
      if (request.stream) {
        clearTimeout(timer);
        return accountedStream(deployment, state, result, request, caller, release, fail);
      }
      release();
      const used = deployment.usageOf(result);
      if (used !== undefined && used !== request.estimate) state.spend(used - request.estimate);
      state.recordSuccess();
      return result;
    },
    (error: unknown) => {
      release();
      // Nothing was produced: the estimate goes back, the request stays counted.
      throw fail(error, request.estimate);
    },
  );
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
        if (request.hideUsageChunk && deployment.isUsageChunk(event)) continue;
        yield event;
      }
      if (!caller?.aborted) state.recordSuccess();
    } catch (error) {
      // Tokens already streamed were spent upstream: keep them charged.
      throw fail(error, 0);
    } finally {
      release();
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
  return error instanceof Error ? error : new Error(String(error));
}

import {
  defer,
  fromEvent,
  lastValueFrom,
  of,
  race,
  retry,
  switchMap,
  take,
  throwError,
  timer,
  type Observable,
} from 'rxjs';
import type { FailoverOptions } from '../types';
import type { ProviderErrors } from '../registry/deployment';
import { isNoRoom } from '../quota/no-room';
import { classify, type FailureReason } from './classify';

/** Default number of attempts per call, the first included. */
const DEFAULT_ATTEMPTS = 2;

/** A resolved failover policy. */
export interface FailoverPolicy {
  attempts: number;
  delay: (error: unknown, attempt: number) => number;
  retryIf: (error: unknown, errors: ProviderErrors) => boolean;
  /** Told of every further attempt before its wait (see {@link FailoverOptions.onRetry}). */
  onRetry?: RetryListener;
}

/**
 * Told of each further attempt of a call, before its wait: the attempt's number (2, 3, ...), the
 * wait in ms, and why the previous attempt failed.
 */
type RetryListener = (
  attempt: number,
  delay: number,
  reason: FailureReason,
  error: unknown,
) => void;

/** Fill in the defaults of {@link FailoverOptions}. */
export function failoverPolicy(options: FailoverOptions = {}): FailoverPolicy {
  const { delay = 0, retryIf, onRetry } = options;
  return {
    attempts: options.attempts ?? DEFAULT_ATTEMPTS,
    onRetry,
    delay: typeof delay === 'function' ? delay : () => delay,
    retryIf: (error, errors) => {
      const verdict = classify(error, errors);
      // A caller's abort and the switchboard's own errors are final, whatever retryIf says.
      if (verdict.reason === 'aborted' || verdict.reason === 'switchboard') return false;
      // No deployment had room and nothing was sent: another attempt would find none either.
      if (isNoRoom(error)) return false;
      return retryIf ? retryIf(error) : verdict.retry;
    },
  };
}

/**
 * What {@link failover} needs of the call it retries: how to make the next attempt, the policy,
 * the provider's error classes, the caller's signal, and who hears of each retry.
 *
 * @example
 * ```ts
 * const run: FailoverRun<Answer> = { next: () => call.again(), policy, errors, signal };
 * ```
 */
interface FailoverRun<T> {
  /** Starts attempt number `attempt` (2, 3, ...): routed anew. */
  readonly next: (attempt: number) => Promise<T>;
  readonly policy: FailoverPolicy;
  /** The SDK's error classes of the call's provider (classification, the abort error). */
  readonly errors: ProviderErrors;
  /** The caller's signal: an abort ends the wait between attempts. */
  readonly signal?: AbortSignal | null;
  /** Hears of each attempt to come, after `policy.onRetry`. */
  readonly onRetry?: RetryListener;
}

/**
 * Further attempts after a first one failed with `error`: an RxJS `retry` over a `defer`, so each
 * subscription runs `next` anew (which selects a deployment again). Resolves with the first
 * success, or rejects with the last error once the policy says stop. The caller's abort ends the
 * wait between attempts at once, with the SDK's `APIUserAbortError`, and no further attempt
 * starts. Before each wait, `policy.onRetry` and then `onRetry` hear of the attempt to come.
 *
 * Only entered after a failure: a call that succeeds at once never builds this pipeline.
 *
 * @example
 * ```ts
 * const result = await promise.catch((error) =>
 *   failover(error, { next: () => call.again(), policy, errors: deployment.errors, signal: options?.signal }),
 * );
 * ```
 */
export function failover<T>(error: unknown, run: FailoverRun<T>): Promise<T> {
  const { next, policy, errors, signal, onRetry } = run;
  if (policy.attempts <= 1 || signal?.aborted || !policy.retryIf(error, errors)) {
    return Promise.reject(error);
  }
  let attempt = 1;
  const wait = (err: unknown): Observable<unknown> => {
    const ms = policy.delay(err, attempt + 1);
    if (policy.onRetry || onRetry) {
      const { reason } = classify(err, errors);
      policy.onRetry?.(attempt + 1, ms > 0 ? ms : 0, reason, err);
      onRetry?.(attempt + 1, ms > 0 ? ms : 0, reason, err);
    }
    if (!(ms > 0)) return of(0);
    if (!signal) return timer(ms);
    // An abort ends the wait with the SDK's abort error: no further attempt is started.
    const aborted = fromEvent(signal, 'abort').pipe(
      switchMap(() => throwError(() => new errors.APIUserAbortError())),
    );
    return race(timer(ms), aborted).pipe(take(1));
  };
  const attempts = defer(() => next(++attempt)).pipe(
    retry({
      count: policy.attempts - 2,
      delay: (err: unknown) =>
        signal?.aborted || !policy.retryIf(err, errors) ? throwError(() => err) : wait(err),
    }),
  );
  const pipeline = wait(error).pipe(switchMap(() => attempts));
  return lastValueFrom(pipeline) as Promise<T>;
}

import { retryAfterMs, type Verdict } from '../failover/classify';
import { requestLimitHit } from '../quota/request-window';
import type { ModelState } from '../registry/model-state';
import type { AttemptHooks, PreparedRequest } from './attempt-types';

/**
 * What an attempt's failure is weighed on: the model it was sent to, its request, where its
 * answer's headers go, and when it was charged and sent.
 *
 * @example
 * ```ts
 * weighFailure(attempt, classify(error, deployment.errors));
 * ```
 */
interface FailedAttempt {
  readonly modelState: ModelState;
  readonly request: PreparedRequest;
  readonly hooks: AttemptHooks;
  /** When its admission was charged (undefined: unmetered). */
  readonly sentAt: number | undefined;
  /** When it was sent (epoch ms). */
  readonly startedAt: number;
}

/**
 * The first reading of a failure, before it is classified. Nothing was produced (`released`; a
 * 429 among others: the upstream did not admit it): the charge goes back, the request stays
 * counted, before the error's headers are read, so they are compared with a count that no longer
 * holds it, and from the newest usage, where it was charged (a shared store then never shows the
 * others a refused call as usage). A 429 for the request limit that the count of its window did
 * not expect says how the upstream counts requests: weighed before the headers correct that count.
 *
 * @example
 * ```ts
 * readRefusal(attempt, error, true);
 * ```
 */
export function readRefusal(a: FailedAttempt, error: unknown, released: boolean): void {
  const { modelState: state, request } = a;
  const back = request.metered && released;
  if (back) state.release(request.admission);
  const headers = (error as { headers?: unknown } | null)?.headers;
  const readable = headers && typeof (headers as Headers).get === 'function';
  if (request.metered && requestLimitHit(error)) {
    state.quota.requestsRefused(retryAfterMs(headers, undefined, state.maxCooldown));
  } else if (
    back &&
    readable &&
    request.admission.uncapped !== undefined &&
    status(error) === 429
  ) {
    state.quota.uncappedRefused(request.admission, headers as Headers);
  }
  if (readable) {
    a.hooks.observed(state, headers as Headers, back ? undefined : request.admission, a.sentAt);
  }
}

/** An error's HTTP status, when it has one. */
function status(error: unknown): unknown {
  return (error as { status?: unknown } | null)?.status;
}

/**
 * What a classified failure says of its model: a timeout, that it is at least that slow; a
 * failure that counts, a step toward its breaker's threshold (then it cools down); a mark-down
 * the quota view does not explain ({@link explainedByQuota}), a cooldown.
 *
 * @example
 * ```ts
 * weighFailure(attempt, verdict);
 * ```
 */
export function weighFailure(a: FailedAttempt, verdict: Verdict): void {
  const { modelState: state, request } = a;
  // No answer within the deadline: at least that slow.
  if (verdict.reason === 'first_token_timeout') state.latency.firstEvent(a.startedAt);
  else if (verdict.reason === 'timeout') {
    if (request.stream) state.latency.firstEvent(a.startedAt);
    else state.latency.answered(a.startedAt, request.admission.output);
  }
  if (verdict.countsAsFailure) {
    // The breaker opens at its threshold of failures in a row: the model cools down.
    if (state.recordFailure() >= state.breaker.threshold) {
      state.markDown(undefined, `${state.breaker.threshold} consecutive failures`);
    }
  }
  if (verdict.markDown !== undefined && !explainedByQuota(verdict, state, request)) {
    const ms = verdict.markDown === 'default' ? undefined : verdict.markDown;
    state.markDown(ms, verdict.why ?? verdict.reason);
  }
}

/**
 * A 429 the quota view explains: it has no room for this call either, now that the call's own
 * charge is back and the 429's headers, if any, were read (they set the view to the upstream's
 * count). The view then holds back such calls, and lets smaller ones through that the upstream
 * still admits; cooling the model would keep those out too (and, with a shared state store, out
 * of every replica). A 429 the view does not explain, because it still has room for the call (no
 * headers corrected it, or the limit is one no header shows, like Azure's requests per 10 s),
 * cools the model for its `retry-after`.
 */
function explainedByQuota(verdict: Verdict, state: ModelState, request: PreparedRequest): boolean {
  return (
    verdict.reason === 'rate_limit' && request.metered && !state.quota.hasRoom(request.admission)
  );
}

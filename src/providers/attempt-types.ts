import type { FailureReason } from '../failover/classify';
import type { Admission, TokenUsage } from '../quota/admission';
import type { RateLimitErrorClass } from '../quota/no-room';
import type { Answer, Deployment, SdkRequestOptions } from '../registry/deployment';
import type { ModelState } from '../registry/model-state';
import type { Deadlines } from '../runtime/deadlines';
import type { AttemptContext, AttemptTrace } from '../telemetry/gen-ai-telemetry';
import type { ApiAdapter, ApiOperation } from './adapter';

/** What an attempt reports back to its switchboard. */
export interface AttemptHooks {
  sent(state: ModelState): void;
  failed(state: ModelState, reason: FailureReason): void;
  /** The upstream reported usage that cannot be (`fault` says what): the attempt keeps its charge. */
  faultyUsage?(state: ModelState, fault: string): void;
  /** A request lost to a stale pooled socket was sent again at once, on the same deployment. */
  staleSocketRetried?(state: ModelState): void;
  /** The attempt starts: its GenAI span and measurements, told how it ends. */
  started?(
    deployment: Deployment,
    state: ModelState,
    request: PreparedRequest,
    context: AttemptContext,
    /** The name of the API adapter that sends it (`embeddings`, `chat.completions`, ...). */
    api: string,
  ): AttemptTrace | undefined;
  /**
   * The headers of every answer from the upstream, errors included (rate-limit anchoring).
   * `admission` is the call's own charge while it still stands (undefined: already given back).
   */
  observed(
    state: ModelState,
    headers: Headers,
    admission: Admission | undefined,
    sentAt?: number,
  ): void;
  /** Where the attempt's deadline waits (one timer per duration for all attempts). */
  deadlines: Deadlines;
  /** ms from send to a stream's first event, switchboard-wide (a model's own wins); 0: none. */
  firstTokenTimeout?: number;
  /** ms between a stream's events once output began, switchboard-wide (a model's own wins); 0: none. */
  streamIdleTimeout?: number;
}

/** A request made ready for one surface, with what it is charged before it is sent. */
export interface PreparedRequest {
  body: Record<string, unknown>;
  stream: boolean;
  /** What the upstream charges at admission: input and reserved output (0 for unmetered calls). */
  admission: Admission;
  /** Whether the call uses the model's quota at all. */
  metered: boolean;
  /** The switchboard asked for usage the caller did not: hide the usage-only events. */
  hideUsageEvents: boolean;
  /** Sees the answer, or each stream event, of the attempt that succeeded (response ids). */
  track?: ResponseTracker;
  /** The call's tenant and cost account, with `tenants` or `pricing`: settled by the usage. */
  account?: UsageAccount;
}

/**
 * Told the usage of the attempt that produced some (`undefined`: the answer did not say; its
 * admission charge stands); returns its cost in USD when the model has a price there.
 *
 * @example
 * ```ts
 * const usd = request.account?.settled(deployment, state, request.admission, usage);
 * ```
 */
interface UsageAccount {
  /**
   * Before an attempt that may go to any of `models`: resolves once a budget holds what it may be
   * billed (`undefined`: it already does, or there is no budget), or rejects with the 429.
   */
  cover(
    models: readonly string[],
    admission: Admission,
    RateLimitError: RateLimitErrorClass,
  ): Promise<void> | undefined;
  settled(
    deployment: Deployment,
    state: ModelState,
    admission: Admission,
    usage: TokenUsage | undefined,
  ): number | undefined;
  /** The call failed for its caller: what the account still holds for it goes back. */
  end(error: unknown): void;
}

/**
 * Sees the answer, or each stream event, of the attempt that succeeded: where the objects it
 * creates (stored responses) live.
 *
 * @example
 * ```ts
 * const tracker: ResponseTracker = { seen: (value, body, d) => console.log(d.name, value) };
 * ```
 */
export interface ResponseTracker {
  seen(
    value: unknown,
    body: Record<string, unknown>,
    deployment: Deployment,
    adapter: ApiAdapter,
  ): void;
  /** The stream of the attempt that succeeded ended normally: its consumer read every event. */
  ended?(): void;
}

/**
 * Who hears how an attempt ended: exactly one of its methods is called, once, maybe before
 * `runAttempt` returns. Neither may throw.
 */
export interface AttemptOutcome {
  resolve(answer: Answer): void;
  reject(error: Error): void;
}

/**
 * What an attempt sends, wherever it goes: through which API operation, with which body and
 * charge, the caller's SDK options, and which attempt of its call it is. A call's dispatch is
 * this for each of its attempts (no object is made per attempt to say it); a fallback's, whose
 * body names another model, or a translated call's, is one of its own.
 *
 * @example
 * ```ts
 * const call: AttemptCall = { adapter, op, request, options: undefined, context: { attempt: 1 } };
 * ```
 */
export interface AttemptCall {
  readonly adapter: ApiAdapter;
  readonly op: ApiOperation;
  readonly request: PreparedRequest;
  readonly options: SdkRequestOptions | undefined;
  readonly context: AttemptContext;
}

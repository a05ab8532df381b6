import type { SwitchboardOptions } from '../config/switchboard-options';
import type { FailureReason, SwitchboardLogger } from '../types';
import type { AttemptHooks, PreparedRequest } from '../providers/attempt-types';
import type { Admission } from '../quota/admission';
import type { Deployment } from '../registry/deployment';
import type { ModelState } from '../registry/model-state';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import { Deadlines } from '../runtime/deadlines';
import type { CapacityQueue } from '../scheduling/capacity-queue';
import { GEN_AI_VALUES } from '../telemetry/gen-ai-conventions';
import {
  GenAiTelemetry,
  type AttemptContext,
  type AttemptTrace,
  type GenAiOperationName,
} from '../telemetry/gen-ai-telemetry';
import type { SwitchboardMetrics } from '../telemetry/switchboard-metrics';
import type { TrafficRecorder } from '../traffic/traffic-recorder';

/** Why an attempt went to a fallback model, as the metrics count it. */
type FallbackReason = NonNullable<Parameters<SwitchboardMetrics['request']>[2]>;

/**
 * What every attempt of a switchboard reports to: the metrics, the GenAI span and the traffic
 * record, the rate-limit anchoring of the quota (which may wake the queue), the log for what
 * only a deployment's answers can say (a body that is not JSON, usage that cannot be).
 *
 * Its reports are methods of one class rather than closures made per switchboard, so the code
 * optimized for one switchboard's attempts serves every other's: a closure is a new function for
 * each switchboard, and code built on it is thrown away with the switchboard that made it.
 *
 * @example
 * ```ts
 * const hooks = new SwitchboardHooks(options, { metrics, logger, queue, traffic });
 * ```
 */
export class SwitchboardHooks implements AttemptHooks {
  /** Where the attempts' deadlines wait (one timer per duration for all attempts). */
  readonly deadlines = new Deadlines();
  readonly firstTokenTimeout: number | undefined;
  readonly streamIdleTimeout: number | undefined;
  private readonly metrics: SwitchboardMetrics;
  private readonly logger: SwitchboardLogger;
  private readonly queue: CapacityQueue | undefined;
  private readonly traffic: TrafficRecorder | undefined;
  /** Tracer and meter taken now, as for the metrics: providers registered in main.ts count. */
  private readonly genAi = new GenAiTelemetry();

  constructor(
    options: Pick<SwitchboardOptions, 'firstTokenTimeout' | 'streamIdleTimeout'>,
    to: {
      metrics: SwitchboardMetrics;
      logger: SwitchboardLogger;
      queue: CapacityQueue | undefined;
      traffic: TrafficRecorder | undefined;
    },
  ) {
    this.firstTokenTimeout = options.firstTokenTimeout;
    this.streamIdleTimeout = options.streamIdleTimeout;
    this.metrics = to.metrics;
    this.logger = to.logger;
    this.queue = to.queue;
    this.traffic = to.traffic;
  }

  sent(model: ModelState): void {
    this.metrics.request(model);
  }

  failed(model: ModelState, reason: FailureReason): void {
    this.metrics.failure(model, reason);
    // Nothing else says which deployment sent it: the caller sees the last attempt's error.
    if (reason === 'malformed_response') {
      this.logger.warn(
        `${model.deployment}/${model.name} answered with a body that is not valid JSON`,
      );
    }
  }

  faultyUsage(model: ModelState, fault: string): void {
    this.logger.warn(
      `${model.deployment}/${model.name} reported usage that cannot be (${fault}): the attempt is charged its reservation`,
    );
  }

  staleSocketRetried(model: ModelState): void {
    this.metrics.retry(model, 'stale_socket');
  }

  started(
    deployment: Deployment,
    model: ModelState,
    request: PreparedRequest,
    attempt: AttemptContext,
    api: string,
  ): AttemptTrace | undefined {
    const span = this.genAi.forDeployment(
      deployment,
      model.name,
      request.body,
      attempt,
      operationOf(api),
    );
    const traffic = this.traffic;
    if (traffic === undefined) return span;
    return bothTraces(span, traffic.attempt(deployment, model.name, request, attempt.call));
  }

  observed(
    model: ModelState,
    headers: Headers,
    admission: Admission | undefined,
    sentAt?: number,
  ): void {
    model.quota.observe(headers, admission, sentAt);
    this.metrics.answered(model, headers);
    // An answer may show room (the upstream counts less than we did).
    const queue = this.queue;
    if (queue !== undefined && queue.length(model.name) > 0) queue.kick(model.name);
  }
}

/**
 * The hooks of an attempt sent to a fallback model: as `base`'s, but its request is counted as
 * one that fell back from `model` for `reason`.
 *
 * @example
 * ```ts
 * const hooks = new FallbackHooks(shared.hooks, shared.metrics, { model: 'gpt-4o', reason: 'unavailable', translated: false });
 * ```
 */
export class FallbackHooks implements AttemptHooks {
  readonly deadlines: Deadlines;
  readonly firstTokenTimeout: number | undefined;
  readonly streamIdleTimeout: number | undefined;

  constructor(
    private readonly base: AttemptHooks,
    private readonly metrics: SwitchboardMetrics,
    private readonly from: { model: string; reason: FallbackReason; translated: boolean },
  ) {
    this.deadlines = base.deadlines;
    this.firstTokenTimeout = base.firstTokenTimeout;
    this.streamIdleTimeout = base.streamIdleTimeout;
  }

  sent(state: ModelState): void {
    const { model, reason, translated } = this.from;
    this.metrics.request(state, model, reason, translated);
  }

  failed(state: ModelState, reason: FailureReason): void {
    this.base.failed(state, reason);
  }

  faultyUsage(state: ModelState, fault: string): void {
    this.base.faultyUsage?.(state, fault);
  }

  staleSocketRetried(state: ModelState): void {
    this.base.staleSocketRetried?.(state);
  }

  started(
    deployment: Deployment,
    state: ModelState,
    request: PreparedRequest,
    context: AttemptContext,
    api: string,
  ): AttemptTrace | undefined {
    return this.base.started?.(deployment, state, request, context, api);
  }

  observed(
    state: ModelState,
    headers: Headers,
    admission: Admission | undefined,
    sentAt?: number,
  ): void {
    this.base.observed(state, headers, admission, sentAt);
  }
}

/** The GenAI operation of an API surface's calls. */
function operationOf(api: string | undefined): GenAiOperationName {
  return api === 'embeddings' ? GEN_AI_VALUES.OPERATION_EMBEDDINGS : GEN_AI_VALUES.OPERATION_CHAT;
}

/** One trace that tells both of an attempt's observers (the span, the traffic record). */
function bothTraces(span: AttemptTrace, record: AttemptTrace | undefined): AttemptTrace {
  if (record === undefined) return span;
  return {
    response: (result) => (span.response(result), record.response(result)),
    event: (event) => (span.event(event), record.event(event)),
    streamEnded: () => (span.streamEnded(), record.streamEnded()),
    failed: (error, reason) => (span.failed(error, reason), record.failed(error, reason)),
    cost: (usd) => span.cost(usd),
  };
}

/**
 * Room may have come back for a model (a cooldown ended, a limit rose, a call ended at its cap,
 * a charge was given back): its line in `queue` is tried now rather than when room was expected.
 *
 * @example
 * ```ts
 * if (queue !== undefined) wakeOnRoom(registry, queue);
 * ```
 */
export function wakeOnRoom(registry: DeploymentRegistry, queue: CapacityQueue): void {
  registry.onModelEvent((model, event) => {
    if (queue.length(model.name) === 0) return;
    if (event.type === 'up' || event.type === 'limit' || event.type === 'free') {
      queue.kick(model.name);
    } else if (event.type === 'spend' && (event.tokens < 0 || event.requests < 0)) {
      queue.kick(model.name);
    }
  });
}

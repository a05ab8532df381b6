import type { SwitchboardOptions } from '../config/switchboard-options';
import type { SwitchboardLogger } from '../types';
import type { AttemptHooks } from '../providers/attempt-types';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import { Deadlines } from '../runtime/deadlines';
import type { CapacityQueue } from '../scheduling/capacity-queue';
import { GEN_AI_VALUES } from '../telemetry/gen-ai-conventions';
import {
  GenAiTelemetry,
  type AttemptTrace,
  type GenAiOperationName,
} from '../telemetry/gen-ai-telemetry';
import type { SwitchboardMetrics } from '../telemetry/switchboard-metrics';
import type { TrafficRecorder } from '../traffic/traffic-recorder';

/**
 * What every attempt of a switchboard reports to: the metrics, the GenAI span and the traffic
 * record, the rate-limit anchoring of the quota (which may wake the queue), the log for what
 * only a deployment's answers can say (a body that is not JSON, usage that cannot be).
 *
 * @example
 * ```ts
 * const hooks = attemptHooks(options, { metrics, logger, queue, traffic });
 * ```
 */
export function attemptHooks(
  options: Pick<SwitchboardOptions, 'firstTokenTimeout' | 'streamIdleTimeout'>,
  to: {
    metrics: SwitchboardMetrics;
    logger: SwitchboardLogger;
    queue: CapacityQueue | undefined;
    traffic: TrafficRecorder | undefined;
  },
): AttemptHooks {
  const { metrics, logger, queue, traffic } = to;
  // Tracer and meter taken now, as for the metrics: providers registered in main.ts count.
  const genAi = new GenAiTelemetry();
  return {
    sent: (model) => metrics.request(model),
    failed: (model, reason) => {
      metrics.failure(model, reason);
      // Nothing else says which deployment sent it: the caller sees the last attempt's error.
      if (reason === 'malformed_response') {
        logger.warn(
          `${model.deployment}/${model.name} answered with a body that is not valid JSON`,
        );
      }
    },
    faultyUsage: (model, fault) =>
      logger.warn(
        `${model.deployment}/${model.name} reported usage that cannot be (${fault}): the attempt is charged its reservation`,
      ),
    staleSocketRetried: (model) => metrics.retry(model, 'stale_socket'),
    started: traffic
      ? (deployment, model, request, attempt, api) =>
          bothTraces(
            genAi.forDeployment(deployment, model.name, request.body, attempt, operationOf(api)),
            traffic.attempt(deployment, model.name, request, attempt.call),
          )
      : (deployment, model, request, attempt, api) =>
          genAi.forDeployment(deployment, model.name, request.body, attempt, operationOf(api)),
    deadlines: new Deadlines(),
    firstTokenTimeout: options.firstTokenTimeout,
    streamIdleTimeout: options.streamIdleTimeout,
    observed: queue
      ? (model, headers, admission, sentAt) => {
          model.quota.observe(headers, admission, sentAt);
          metrics.answered(model, headers);
          // An answer may show room (the upstream counts less than we did).
          if (queue.length(model.name) > 0) queue.kick(model.name);
        }
      : (model, headers, admission, sentAt) => {
          model.quota.observe(headers, admission, sentAt);
          metrics.answered(model, headers);
        },
  };
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

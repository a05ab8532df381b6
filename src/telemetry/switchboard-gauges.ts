import type { Meter, ObservableCallback, ObservableGauge } from '@opentelemetry/api';
import type { QueueView } from '../scheduling/queue-view';
import type { LimitName } from '../quota/quota-limit';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { ModelState } from '../registry/model-state';
import { SWITCHBOARD_METRICS as M } from './metric-names';

/** Limits reported even when 0 (unlimited, or not learned yet): every model has them. */
const ALWAYS: readonly LimitName[] = ['tpm', 'rpm'];
/** Limits reported only where they apply (Claude on Foundry). */
const APART: readonly LimitName[] = ['itpm', 'otpm'];

/**
 * The switchboard's observable gauges, read from the registry (and the queue) at each collection:
 * healthy deployments, utilization, limits, what is left of them, the queue, calls in flight and
 * latency. See
 * {@link SWITCHBOARD_METRICS} for their names and labels.
 *
 * @example
 * ```ts
 * const gauges = new SwitchboardGauges(meter, registry, queue);
 * // ... on close:
 * gauges.close();
 * ```
 */
export class SwitchboardGauges {
  private readonly callbacks: Array<[ObservableGauge, ObservableCallback]> = [];

  constructor(meter: Meter, registry: DeploymentRegistry, queue: QueueView | undefined) {
    const states = () => [...registry.deployments.values()].flatMap((d) => [...d.models.values()]);
    this.gauge(
      meter.createObservableGauge(M.HEALTHY_DEPLOYMENTS, {
        description: 'Deployments that would take a call for the model now',
      }),
      (result) => {
        for (const [model, pool] of registry.pools) {
          let n = 0;
          for (const d of pool) if (d.models.get(model)!.isHealthy()) n++;
          result.observe(n, { model });
        }
      },
    );
    this.gauge(
      meter.createObservableGauge(M.UTILIZATION, {
        description:
          'Utilization of a model on a deployment: the largest share of its limits, 1 while cooling',
        unit: '1',
      }),
      (result) => {
        for (const state of states()) result.observe(state.util, state.attributes);
      },
    );
    this.gauge(
      meter.createObservableGauge(M.QUOTA_LIMIT, {
        description:
          'Limit per minute in force, configured or learned (0: unlimited or not learned yet)',
      }),
      (result) => {
        for (const state of states()) {
          for (const limit of [...ALWAYS, ...APART]) {
            const value = state.quota.limits[limit].value;
            if (value > 0 || ALWAYS.includes(limit)) {
              result.observe(value, { ...state.attributes, limit });
            }
          }
        }
      },
    );
    this.gauge(
      meter.createObservableGauge(M.QUOTA_REMAINING, {
        description:
          'What is left of a limit this minute as the upstream counts it (our count, anchored on its rate-limit headers)',
      }),
      (result) => {
        for (const state of states()) {
          const used = state.quota.anchoredUsage();
          for (const limit of [...ALWAYS, ...APART]) {
            const value = state.quota.limits[limit].value;
            if (value > 0) {
              result.observe(Math.max(0, value - used[limit]), { ...state.attributes, limit });
            }
          }
        }
      },
    );
    this.gauge(
      meter.createObservableGauge(M.UPSTREAM_REMAINING, {
        description: "What the upstream's last rate-limit headers said was left (once it said)",
      }),
      (result) => {
        for (const state of states()) {
          for (const [limit, reading] of Object.entries(state.quota.upstreamRemaining)) {
            if (reading !== undefined) {
              result.observe(reading.remaining, { ...state.attributes, limit });
            }
          }
        }
      },
    );
    this.gauge(
      meter.createObservableGauge(M.QUEUE_LENGTH, {
        description: 'Calls waiting for room (with the queue option; 0 without)',
      }),
      (result) => {
        for (const model of registry.pools.keys()) {
          result.observe(queue?.length(model) ?? 0, { model });
        }
      },
    );
    this.gauge(
      meter.createObservableGauge(M.QUEUE_OLDEST_WAIT, {
        description: 'Seconds the longest-waiting call for the model has waited',
        unit: 's',
      }),
      (result) => {
        for (const model of registry.pools.keys()) {
          result.observe((queue?.longestWait(model) ?? 0) / 1000, { model });
        }
      },
    );
    this.callsInFlight(meter, states);
  }

  /** Calls in flight, their caps, and the latency estimates. */
  private callsInFlight(meter: Meter, states: () => ModelState[]): void {
    this.gauge(
      meter.createObservableGauge(M.IN_FLIGHT, {
        description: 'Calls of a model sent to a deployment and not yet ended',
      }),
      (result) => {
        for (const s of states()) {
          if (s.inFlight.reported) result.observe(s.inFlight.count, s.attributes);
        }
      },
    );
    this.gauge(
      meter.createObservableGauge(M.IN_FLIGHT_LIMIT, {
        description: 'The most calls of a model in flight on a deployment at once (maxInFlight)',
      }),
      (result) => {
        for (const s of states()) {
          if (s.inFlight.cap > 0) result.observe(s.inFlight.cap, s.attributes);
        }
      },
    );
    for (const [name, kind, description] of [
      [M.LATENCY_FIRST_TOKEN, 'firstTokenMs', 'Recent time to the first token of streams'],
      [M.LATENCY_PER_TOKEN, 'perTokenMs', 'Recent time per output token of answers not streamed'],
    ] as const) {
      this.gauge(meter.createObservableGauge(name, { description, unit: 's' }), (result) => {
        for (const s of states()) {
          const ms = kind === 'firstTokenMs' ? s.latency.firstTokenMs : s.latency.perTokenMs;
          if (ms !== undefined) result.observe(ms / 1000, s.attributes);
        }
      });
    }
  }

  /** Detach every gauge from the registry. */
  close(): void {
    for (const [gauge, callback] of this.callbacks) gauge.removeCallback(callback);
    this.callbacks.length = 0;
  }

  private gauge(gauge: ObservableGauge, callback: ObservableCallback): void {
    gauge.addCallback(callback);
    this.callbacks.push([gauge, callback]);
  }
}

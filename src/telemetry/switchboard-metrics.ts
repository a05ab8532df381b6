import {
  metrics,
  type Counter,
  type MeterProvider,
  type ObservableCallback,
  type ObservableGauge,
} from '@opentelemetry/api';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { ModelState } from '../registry/model-state';
import type { FailureReason } from '../failover/classify';

/** The meter's name, as the Python original names it. */
export const METER_NAME = 'azure_switchboard.switchboard';

/**
 * The switchboard's OpenTelemetry instruments. The meter is taken from the global provider when
 * the switchboard is built (not at import), so a provider registered in `main.ts` after the
 * imports still receives the data.
 *
 * - `requests` (counter) {model, deployment}: attempts sent upstream
 * - `failures` (counter) {model, deployment, reason}: attempts that failed
 * - `retries` (counter) {model, deployment, reason}: further attempts after a failure on that
 *   deployment: failover to another attempt (by the failure's reason), or the immediate resend of
 *   a request lost to a stale pooled socket (`stale_socket`)
 * - `healthy_deployments_count` (gauge) {model}
 * - `utilization` (gauge) {model, deployment}: the true utilization, 0..1
 *
 * @example
 * ```ts
 * // main.ts: register a provider first, then build the app
 * metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new PrometheusExporter()] }));
 * ```
 */
export class SwitchboardMetrics {
  private readonly requests: Counter;
  private readonly failures: Counter;
  private readonly retries: Counter;
  private readonly gauges: Array<[ObservableGauge, ObservableCallback]> = [];

  constructor(registry: DeploymentRegistry, provider: MeterProvider = metrics.getMeterProvider()) {
    const meter = provider.getMeter(METER_NAME);
    this.requests = meter.createCounter('requests', {
      description: 'Requests sent to a deployment (each failover attempt counts)',
    });
    this.failures = meter.createCounter('failures', {
      description: 'Requests to a deployment that failed, by reason',
    });
    this.retries = meter.createCounter('retries', {
      description: 'Further attempts after a failed one, by the reason it failed',
    });
    const healthy = meter.createObservableGauge('healthy_deployments_count', {
      description: 'Deployments currently healthy for a model',
    });
    const util = meter.createObservableGauge('utilization', {
      description: 'Utilization of a model on a deployment: max(tpm, rpm) share, 1 while cooling',
      unit: '1',
    });
    const observeHealthy: ObservableCallback = (result) => {
      for (const [model, pool] of registry.pools) {
        let n = 0;
        for (const d of pool) if (d.models.get(model)!.isHealthy()) n++;
        result.observe(n, { model });
      }
    };
    const observeUtil: ObservableCallback = (result) => {
      for (const d of registry.deployments.values()) {
        for (const state of d.models.values()) result.observe(state.util, state.attributes);
      }
    };
    healthy.addCallback(observeHealthy);
    util.addCallback(observeUtil);
    this.gauges.push([healthy, observeHealthy], [util, observeUtil]);
  }

  request(state: ModelState): void {
    this.requests.add(1, state.attributes);
  }

  failure(state: ModelState, reason: FailureReason): void {
    this.failures.add(1, { ...state.attributes, reason });
  }

  /** A further attempt follows a failure on `state`'s deployment. */
  retry(state: ModelState, reason: FailureReason | 'stale_socket'): void {
    this.retries.add(1, { ...state.attributes, reason });
  }

  /** Detach the gauges from the registry. */
  close(): void {
    for (const [gauge, callback] of this.gauges) gauge.removeCallback(callback);
    this.gauges.length = 0;
  }
}

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
 * - `requests` (counter) {model, deployment}: attempts sent upstream; an attempt that a fallback
 *   model took is counted under the requested `model`, with `fallback` naming the model that
 *   answered
 * - `spillovers` (counter) {model, deployment, priority}: attempts sent to a deployment below its
 *   model's most preferred tier (the overflow of the tiers above)
 * - `fallbacks` (counter) {model, fallback, deployment}: attempts that `fallback` took because
 *   no deployment of `model` could
 * - `failures` (counter) {model, deployment, reason}: attempts that failed
 * - `retries` (counter) {model, deployment, reason}: further attempts after a failure on that
 *   deployment: failover to another attempt (by the failure's reason), or the immediate resend of
 *   a request lost to a stale pooled socket (`stale_socket`)
 * - `spilled_answers` (counter) {model, deployment}: answers an Azure OpenAI provisioned
 *   deployment passed on to its standard deployment (spillover), as its
 *   `x-ms-spillover-from-<deployment>` header says
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
  private readonly spillovers: Counter;
  private readonly fallbacks: Counter;
  private readonly spilledAnswers: Counter;
  /** Azure OpenAI states with the header a spilled answer of theirs carries. */
  private readonly spillHeaders = new Map<ModelState, string>();
  /** States below their model's most preferred tier, with the attributes of their spillovers. */
  private readonly lowerTiers = new Map<ModelState, Readonly<Record<string, string | number>>>();
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
    this.spillovers = meter.createCounter('spillovers', {
      description:
        "Requests sent to a deployment below its model's most preferred tier (the tiers above were full)",
    });
    this.fallbacks = meter.createCounter('fallbacks', {
      description:
        'Requests a fallback model took because no deployment of the requested one could',
    });
    this.spilledAnswers = meter.createCounter('spilled_answers', {
      description:
        'Answers an Azure OpenAI provisioned deployment passed on to its standard deployment (spillover)',
    });
    for (const d of registry.deployments.values()) {
      if (d.provider !== 'openai') continue;
      for (const state of d.models.values()) {
        // A name no header can carry (`ft:gpt-4o:...` on api.openai.com) cannot spill over.
        if (!/^[\w.~!#$%&'*+^`|-]+$/.test(state.upstreamName)) continue;
        this.spillHeaders.set(state, `x-ms-spillover-from-${state.upstreamName.toLowerCase()}`);
      }
    }
    for (const [model, tiers] of registry.tiers) {
      for (const tier of tiers.slice(1)) {
        for (const d of tier) {
          const state = d.models.get(model)!;
          this.lowerTiers.set(state, { ...state.attributes, priority: state.priority });
        }
      }
    }
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

  /** An attempt sent to `state`; `fallbackFor` names the requested model a fallback stands in for. */
  request(state: ModelState, fallbackFor?: string): void {
    if (fallbackFor === undefined) this.requests.add(1, state.attributes);
    else {
      this.requests.add(1, {
        model: fallbackFor,
        deployment: state.deployment,
        fallback: state.name,
      });
      this.fallbacks.add(1, {
        model: fallbackFor,
        fallback: state.name,
        deployment: state.deployment,
      });
    }
    if (this.lowerTiers.size !== 0) {
      const spill = this.lowerTiers.get(state);
      if (spill !== undefined) this.spillovers.add(1, spill);
    }
  }

  /**
   * An answer came from `state`'s deployment: count it if Azure's spillover passed it on. One
   * header lookup: the header names the deployment the request was sent to.
   */
  answered(state: ModelState, headers: Headers): void {
    const header = this.spillHeaders.get(state);
    if (header !== undefined && headers.has(header)) this.spilledAnswers.add(1, state.attributes);
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

import { createNoopMeter, metrics, type Counter, type MeterProvider } from '@opentelemetry/api';
import type { FailureReason } from '../failover/classify';
import type { QueueView } from '../scheduling/queue-view';
import { isNoRoom } from '../quota/no-room';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { ModelState } from '../registry/model-state';
import type { Price } from '../types';
import { LaneMetrics } from './lane-metrics';
import { METER_NAME, SWITCHBOARD_METRICS as M } from './metric-names';
import { SwitchboardGauges } from './switchboard-gauges';

export { METER_NAME, SWITCHBOARD_METRICS } from './metric-names';

/** The class of the API's meters while no SDK is registered. */
const NoopMeter = createNoopMeter().constructor;

/** Every reason a failed attempt is counted under; each starts at 0. */
const REASONS: readonly FailureReason[] = [
  'rate_limit',
  'quota_exhausted',
  'unauthorized',
  'not_deployed',
  'connection',
  'timeout',
  'first_token_timeout',
  'aborted',
  'server_error',
  'malformed_response',
  'client_error',
  'switchboard',
  'other',
];

/**
 * Why a fallback model took a call, as {@link SWITCHBOARD_METRICS.FALLBACKS} counts it:
 * `unavailable` (no deployment of the requested model had room, or all were down),
 * `context_window` (the prompt does not fit the requested model's window), `content_filter`
 * (Azure's content filter refused it on the requested model).
 */
type FallbackReason = 'unavailable' | 'context_window' | 'content_filter';

/** Why a call failed for its caller, as {@link SWITCHBOARD_METRICS.CALL_FAILURES} counts it. */
export type CallFailureReason = 'no_room' | 'rate_limit' | 'other';

/**
 * Where a model is priced: the price of a model on a deployment, if `pricing` gives it one (the
 * switchboard's price table is one).
 *
 * @example
 * ```ts
 * const prices: PriceLookup = { on: (deployment, model) => pricing[model] };
 * ```
 */
export interface PriceLookup {
  on(deployment: string, model: string): Price | undefined;
}

/**
 * Options of {@link SwitchboardMetrics} beyond the registry.
 *
 * @example
 * ```ts
 * new SwitchboardMetrics(registry, undefined, { queue, fallbacks });
 * ```
 */
export interface SwitchboardMetricsOptions {
  /** The queue of calls waiting for room, when `options.queue` is set. */
  queue?: QueueView;
  /** Per model, the models its calls fall back to (their counters start at 0). */
  fallbacks?: ReadonlyMap<string, readonly string[]>;
  /** With `pricing`: the priced models (their cost counters start at 0) and the tenants named. */
  costs?: { prices: PriceLookup; tenants: readonly string[] };
  /** Per model, the models tried when the content filter refuses it (counters start at 0). */
  contentFilterFallbacks?: Readonly<Record<string, readonly string[]>>;
}

/**
 * The switchboard's OpenTelemetry instruments, under the scope {@link METER_NAME} and the prefix
 * `switchboard.` (see {@link SWITCHBOARD_METRICS} for each one's labels). The meter is taken from
 * the global provider when the switchboard is built (not at import), so a provider registered in
 * `main.ts` after the imports still receives the data. Every counter starts at 0 for each label
 * set known at construction.
 *
 * @example
 * ```ts
 * // main.ts: register a provider first, then build the app
 * metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new PrometheusExporter()] }));
 * // GET /metrics: switchboard_requests_total{model="gpt-4o-mini",deployment="east"} 12
 * ```
 */
export class SwitchboardMetrics {
  private readonly requests: Counter;
  private readonly failures: Counter;
  private readonly retries: Counter;
  private readonly spillovers: Counter;
  private readonly fallbacks: Counter;
  private readonly tagRefusals: Counter;
  private readonly callFailures: Counter;
  private readonly spilledAnswers: Counter;
  private readonly costs: Counter;
  private readonly learnedRules: Counter;
  private readonly stopRules: () => void;
  /** Azure OpenAI states with the header a spilled answer of theirs carries. */
  private readonly spillHeaders = new Map<ModelState, string>();
  /** The cost counter's attributes, per model and tenant (see {@link cost}). */
  private readonly costLabels = new Map<
    ModelState,
    Map<string, Readonly<Record<string, string>>>
  >();
  /** States below their model's most preferred tier, with the attributes of their spillovers. */
  private readonly lowerTiers = new Map<ModelState, Readonly<Record<string, string | number>>>();
  private readonly gauges: SwitchboardGauges;
  /**
   * @internal Per lane and tenant, with a queue: the dispatch counts admissions and waits there;
   * what users read of it is the exported instruments.
   */
  readonly lanes: LaneMetrics | undefined;
  /** Models a label may name: a caller's unknown model must not make a new series. */
  private readonly models: ReadonlySet<string>;

  constructor(
    registry: DeploymentRegistry,
    provider: MeterProvider = metrics.getMeterProvider(),
    options: SwitchboardMetricsOptions = {},
  ) {
    const meter = provider.getMeter(METER_NAME);
    this.requests = meter.createCounter(M.REQUESTS, {
      description: 'Requests sent to a deployment (each failover attempt counts)',
    });
    this.failures = meter.createCounter(M.FAILURES, {
      description: 'Requests to a deployment that failed, by reason',
    });
    this.retries = meter.createCounter(M.RETRIES, {
      description: 'Further attempts after a failed one, by the reason it failed',
    });
    this.spillovers = meter.createCounter(M.SPILLOVERS, {
      description:
        "Requests sent to a deployment below its model's most preferred tier (the tiers above were full)",
    });
    this.fallbacks = meter.createCounter(M.FALLBACKS, {
      description:
        'Requests a fallback model took for the requested one, by reason: unavailable (no deployment of it could), context_window, content_filter',
    });
    this.callFailures = meter.createCounter(M.CALL_FAILURES, {
      description:
        'Calls that failed for their callers after failover: no_room (429 held back, nothing sent), rate_limit (429 from the upstream), other',
    });
    this.tagRefusals = meter.createCounter(M.TAG_REFUSALS, {
      description:
        'Calls requiring tags that failed for want of room (or of a deployment) among the deployments carrying them',
    });
    this.spilledAnswers = meter.createCounter(M.SPILLED_ANSWERS, {
      description:
        'Answers an Azure OpenAI provisioned deployment passed on to its standard deployment (spillover)',
    });
    this.costs = meter.createCounter(M.COST, {
      description: 'USD spent, priced from the usage each answer reported (with pricing)',
      unit: 'USD',
    });
    this.learnedRules = meter.createCounter(M.LEARNED_RULES, {
      description:
        'Rules an upstream leaves open that a deployment learned from its answers (a per-minute request limit enforced per second), once each',
    });
    this.stopRules = registry.onRuleLearned((state, rule) =>
      this.learnedRules.add(1, { deployment: state.deployment, rule }),
    );
    // The API's meters stay no-ops once taken (it has no proxy meter provider): without an SDK
    // registered, no answer's headers need a look for a spillover that would count nothing.
    const measured = !(meter instanceof NoopMeter);
    for (const d of registry.deployments.values()) {
      if (!measured || d.provider !== 'openai') continue;
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
    this.models = new Set(registry.pools.keys());
    this.zero(registry, options.fallbacks, options.costs, options.contentFilterFallbacks);
    this.gauges = new SwitchboardGauges(meter, registry, options.queue);
    this.lanes =
      options.queue === undefined
        ? undefined
        : new LaneMetrics(meter, [...registry.pools.keys()], options.queue);
  }

  /**
   * An attempt sent to `state`; `fallbackFor` names the requested model a fallback stands in for,
   * and `reason` why it does.
   */
  request(
    state: ModelState,
    fallbackFor?: string,
    reason: FallbackReason = 'unavailable',
    translated = false,
  ): void {
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
        reason,
        translated: translated ? 'true' : 'false',
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

  /**
   * What an answer of `state` cost (USD), for `tenant`: a tenant named in `tenants`, else
   * `other`, so that the labels stay bounded.
   */
  cost(state: ModelState, tenant: string, usd: number): void {
    let byTenant = this.costLabels.get(state);
    if (byTenant === undefined) this.costLabels.set(state, (byTenant = new Map()));
    let labels = byTenant.get(tenant);
    // A named tenant or `other`: a few per model, each made once.
    if (labels === undefined) byTenant.set(tenant, (labels = { ...state.attributes, tenant }));
    this.costs.add(usd, labels);
  }

  failure(state: ModelState, reason: FailureReason): void {
    this.failures.add(1, { ...state.attributes, reason });
  }

  /** A further attempt follows a failure on `state`'s deployment. */
  retry(state: ModelState, reason: FailureReason | 'stale_socket'): void {
    this.retries.add(1, { ...state.attributes, reason });
  }

  /** A call for `model` failed for its caller (after failover) with `error`. */
  callFailed(model: string, error: unknown): void {
    if (!this.models.has(model)) return;
    this.callFailures.add(1, { model, reason: callFailureReason(error) });
  }

  /** A call that requires tags failed where deployments without them were passed over. */
  refusedForTags(model: string): void {
    if (this.models.has(model)) this.tagRefusals.add(1, { model });
  }

  /** Detach the gauges from the registry. */
  close(): void {
    this.stopRules();
    this.gauges.close();
    this.lanes?.close();
  }

  /** Start every counter at 0 for each label set known now: panels show 0, not "no data". */
  private zero(
    registry: DeploymentRegistry,
    fallbacks: ReadonlyMap<string, readonly string[]> | undefined,
    costs: SwitchboardMetricsOptions['costs'],
    contentFilterFallbacks: Readonly<Record<string, readonly string[]>> | undefined,
  ): void {
    for (const d of registry.deployments.values()) {
      for (const state of d.models.values()) {
        if (costs?.prices.on(d.name, state.name) !== undefined) {
          for (const tenant of [...costs.tenants, 'other']) this.cost(state, tenant, 0);
        }
        this.requests.add(0, state.attributes);
        for (const reason of REASONS) {
          this.failures.add(0, { ...state.attributes, reason });
          this.retries.add(0, { ...state.attributes, reason });
        }
        this.retries.add(0, { ...state.attributes, reason: 'stale_socket' });
        this.learnedRules.add(0, { deployment: d.name, rule: 'request-window-1s' });
      }
    }
    for (const spill of this.lowerTiers.values()) this.spillovers.add(0, spill);
    for (const model of registry.pools.keys()) {
      for (const reason of ['no_room', 'rate_limit', 'other'] satisfies CallFailureReason[]) {
        this.callFailures.add(0, { model, reason });
      }
      this.tagRefusals.add(0, { model });
      const zero = (list: readonly string[] | undefined, reasons: readonly FallbackReason[]) => {
        for (const fallback of list ?? []) {
          for (const d of registry.pools.get(fallback) ?? []) {
            for (const reason of reasons) {
              const translated =
                d.provider === registry.pools.get(model)?.[0]?.provider ? 'false' : 'true';
              this.fallbacks.add(0, { model, fallback, deployment: d.name, reason, translated });
            }
          }
        }
      };
      zero(fallbacks?.get(model), ['unavailable', 'context_window']);
      if (contentFilterFallbacks !== undefined && Object.hasOwn(contentFilterFallbacks, model)) {
        zero(contentFilterFallbacks[model], ['content_filter']);
      }
    }
  }
}

/** `no_room` for the switchboard's own 429, `rate_limit` for the upstream's, else `other`. */
function callFailureReason(error: unknown): CallFailureReason {
  if (isNoRoom(error)) return 'no_room';
  return (error as { status?: unknown } | null)?.status === 429 ? 'rate_limit' : 'other';
}

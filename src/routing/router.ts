import { budgetCounts } from '../tenants/budget-options';
import type { SwitchboardOptions } from '../config/switchboard-options';
import type { SwitchboardLogger } from '../types';
import { failoverPolicy, type FailoverPolicy } from '../failover/failover';
import type { ApiAdapter, Surface } from '../providers/adapter';
import type { AttemptHooks, PreparedRequest } from '../providers/attempt-types';
import { CapacityQueue } from '../scheduling/capacity-queue';
import { DEFAULT_MAX_QUEUED } from '../scheduling/queue-view';
import { LaneActivity } from '../scheduling/lanes';
import type { Answer, SdkRequestOptions } from '../registry/deployment';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { DeploymentPicker } from '../selection/pick';
import type { StateStore } from '../state/state-store';
import { SwitchboardError } from '../switchboard.error';
import type {
  SwitchboardMetrics,
  SwitchboardMetricsOptions,
} from '../telemetry/switchboard-metrics';
import { LocalTenantCounts } from '../state/tenant-counts';
import { Tenants } from '../tenants/tenants';
import { contextWindows } from './context-windows';
import { TrafficRecorder } from '../traffic/traffic-recorder';
import { goesStraight, placeCall, type PlacingRouter } from './place-call';
import { Dispatch } from './dispatch';
import { letGo, STRAIGHT_CALL } from './dispatch-call';
import type { SettledCall } from '../providers/call-promise';

export type { FailedCalls } from './failed-calls';
import { SwitchboardHooks, wakeOnRoom } from './attempt-hooks';
import { FailedCallCounts, type FailedCalls } from './failed-calls';
import { readCall, type CallEntry, type CallRecord } from './call-record';
import { PinnedCalls } from './pins';
import { Surfaces } from './surfaces';
import { resolveFallbacks } from '../config/fallbacks';
import { prepareRequest } from './prepare-request';
import { CACHEABLE_TOKENS, prefixKey } from '../selection/cache-affinity';
import { ResponseChains, sessionFromStore } from './store-lookups';
import { responseCache } from '../cache/build-cache';
import type { CacheCall, ResponseCache } from '../cache/response-cache';

/**
 * Every call of a switchboard comes in here, from the surfaces it mounts, and leaves as one
 * {@link Dispatch}: its params are read, its request prepared and charged, the stores asked what
 * they know of its session or of the stored response it builds on; then the dispatch routes and
 * sends it. The switchboard keeps the facade and the lifecycle.
 *
 * @example
 * ```ts
 * const router = new Router(options, {
 *   registry, state, logger,
 *   metrics: (queue, fallbacks) => new SwitchboardMetrics(registry, undefined, { queue, fallbacks }),
 * });
 * const surface = router.surface(chatCompletions);
 * await surface.call('create', { model: 'gpt-4o-mini', messages });
 * ```
 */
export class Router implements PlacingRouter {
  readonly registry: DeploymentRegistry;
  readonly picker: DeploymentPicker;
  readonly state: StateStore;
  readonly logger: SwitchboardLogger;
  readonly metrics: SwitchboardMetrics;
  readonly policy: FailoverPolicy;
  readonly hooks: AttemptHooks;
  /** Calls waiting for room, when `options.queue` is set: the one place calls wait. */
  readonly queue: CapacityQueue | undefined;
  readonly lanes: LaneActivity;
  /** Writes one line per finished call, when `options.recordTraffic` names a file. */
  readonly traffic: TrafficRecorder | undefined;
  /**
   * Per model with fallbacks, every model its calls may fall back to, in the order they are tried
   * (`options.fallbacks` with chains followed).
   */
  readonly fallbacks: ReadonlyMap<string, readonly string[]>;
  /** Tenants' limits and the prices, when `options.tenants` or `options.pricing` is set. */
  readonly tenants: Tenants | undefined;
  /** Per model, the models tried when Azure's content filter refuses it (`options.contentFilterFallbacks`). */
  readonly contentFilterFallbacks: ReadonlyMap<string, readonly string[]>;
  /** Per model with a `contextWindow`, its window; `undefined` when none has one. */
  readonly windows: ReadonlyMap<string, number> | undefined;
  /** Calls that build on (or read) a stored object, each sent to its holder alone. */
  readonly pins: PinnedCalls;
  /** Answers served again, with `options.cache`. */
  private readonly cache: ResponseCache | undefined;
  /** How requests are prepared; a tenant with limits settles every answer, its streams' too. */
  private readonly prep: Parameters<typeof prepareRequest>[3];
  private readonly prepSettled: Parameters<typeof prepareRequest>[3];
  /** Whether calls without a session keep to where their prompt prefix is cached. */
  private readonly cacheAffinity: boolean;
  /** Models served by a provisioned (PTU) deployment somewhere, which counts cached input free. */
  readonly provisioned: ReadonlySet<string>;
  readonly clock: () => number;
  private readonly surfaces: Surfaces;
  private readonly failedCalls: FailedCallCounts;
  private closed = false;

  constructor(
    options: SwitchboardOptions,
    context: {
      registry: DeploymentRegistry;
      picker: DeploymentPicker;
      state: StateStore;
      logger: SwitchboardLogger;
      /** The bytes an event of `sb.fetch`'s stream came in (the response cache replays them). */
      wireBytes?: (event: unknown) => Uint8Array | undefined;
      /** Built once the queue and the fallbacks are known, which the metrics report on. */
      metrics: (
        queue: CapacityQueue | undefined,
        fallbacks: ReadonlyMap<string, readonly string[]>,
        costs?: SwitchboardMetricsOptions['costs'],
      ) => SwitchboardMetrics;
    },
  ) {
    const { registry, state } = context;
    this.registry = registry;
    this.picker = context.picker;
    this.state = state;
    this.logger = context.logger;
    this.policy = failoverPolicy(options.failover);
    this.fallbacks = resolveFallbacks(options.fallbacks);
    this.contentFilterFallbacks = new Map(Object.entries(options.contentFilterFallbacks ?? {}));
    this.windows = contextWindows(registry);
    const chains = new ResponseChains(options.maxResponses ?? 10_000, registry, state);
    this.prep = { defaultOutput: options.defaultReservation ?? 0, tracker: chains };
    this.prepSettled = { ...this.prep, usage: true };
    this.cacheAffinity = options.cacheAffinity ?? true;
    this.provisioned = new Set(
      options.deployments.flatMap((d) =>
        d.models.filter((m) => m.provisioned === true).map((m) => m.name),
      ),
    );
    this.clock = options.clock ?? Date.now;
    this.cache = responseCache(options.cache, {
      registry,
      state,
      clock: this.clock,
      logger: this.logger,
      bytesOf: context.wireBytes ?? (() => undefined),
      deployments: options.deployments,
      pricing: options.pricing,
    });
    // A store that brings room (leases) holds calls for its round trip even without a queue.
    const waits =
      options.queue ?? (state.admissionWait ? { maxWait: state.admissionWait } : undefined);
    const queue = waits ? new CapacityQueue({ ...waits, clock: this.clock }) : undefined;
    this.queue = queue;
    this.lanes = new LaneActivity({
      headroom: options.queue?.batchHeadroom,
      hold: options.queue?.headroomHold,
      clock: this.clock,
      waiting: queue === undefined ? undefined : (model) => queue.length(model, 'interactive'),
    });
    const tenants = new Tenants(options, {
      counts: budgetCounts(
        state.tenantCounts?.() ?? new LocalTenantCounts(),
        state,
        options.budgets,
      ),
      clock: this.clock,
      wait: options.queue && {
        maxWait: options.queue.maxWait,
        maxQueued: options.queue.maxQueued ?? DEFAULT_MAX_QUEUED,
      },
    });
    // Without tenants or prices a call has no account: its path is unchanged.
    this.tenants = tenants.idle ? undefined : tenants;
    const metrics = context.metrics(
      queue,
      this.fallbacks,
      tenants.prices.empty ? undefined : { prices: tenants.prices, tenants: tenants.named },
    );
    this.metrics = metrics;
    this.failedCalls = new FailedCallCounts(metrics);
    this.surfaces = new Surfaces(registry);
    tenants.costMetric = metrics;
    if (queue !== undefined) wakeOnRoom(registry, queue);
    const traffic = options.recordTraffic
      ? new TrafficRecorder(options.recordTraffic, this.logger, this.clock)
      : undefined;
    this.traffic = traffic;
    this.hooks = new SwitchboardHooks(options, { metrics, logger: this.logger, queue, traffic });
    this.pins = new PinnedCalls(this, chains);
  }

  /**
   * The surface an adapter's facade calls: `sb.chat.completions.create(...)` is
   * `surface.call('create', ...)`.
   */
  surface(adapter: ApiAdapter): Surface {
    return this.surfaces.mount(adapter, this);
  }

  /**
   * Calls that failed for their callers since the switchboard started, per model (after
   * failover). A call its caller aborted did not fail and is not counted.
   */
  failures(): Record<string, FailedCalls> {
    return this.failedCalls.read();
  }

  /** Count a call that failed for its caller. */
  countFailure(model: string, error: unknown): void {
    this.failedCalls.add(model, error);
  }

  /**
   * Every later call fails at once; calls waiting for room fail with `closedWaiting`. Resolves
   * when the traffic record, if any, is written.
   */
  close(closedWaiting: () => unknown): Promise<void> {
    this.closed = true;
    this.queue?.close(closedWaiting);
    this.tenants?.close(closedWaiting);
    this.cache?.close();
    return this.traffic?.close() ?? Promise.resolve();
  }

  /**
   * One balanced call, as `sb.<surface>.<opName>(params, options)` makes it (and `sb.fetch`):
   * read once into its record, served from the response cache when it may be, else placed.
   */
  call(entry: CallEntry, params: unknown, options: unknown): Promise<Answer> {
    let call: CallRecord;
    try {
      // The method's name (`sb.chat.completions.create()`) is spelled out only for an error.
      if (this.closed) throw closedError(`${entry.surface}.${entry.opName}()`);
      call = readCall(entry, params, this.tenants);
    } catch (error) {
      return Promise.reject(error);
    }
    const cache = this.cache;
    if (cache !== undefined && !cache.decided(options)) {
      const cached = this.cacheCall(call);
      if (cached !== undefined) {
        return cache.serve(cached, options, (decided) => this.place(call, decided));
      }
    }
    return this.place(call, options, call.entry.open);
  }

  /**
   * The stages of a call, each reading its record: its tenant's account, its request prepared
   * and priced, then one {@link Dispatch} for most calls, else {@link placeCall}. With `open`, the
   * promise returned is the caller's own (see `CallEntry.open`).
   */
  private place(
    call: CallRecord,
    options: unknown,
    open?: (call: SettledCall) => Promise<Answer>,
  ): Promise<Answer> {
    try {
      const { entry, body, model } = call;
      const { adapter, op } = entry;
      const pool = this.registry.poolFor(model);
      if (pool[0]!.provider !== adapter.provider) throw this.surfaces.wrongProvider(adapter, model);
      const tenants = this.tenants;
      const account =
        tenants === undefined || op.metered === false
          ? undefined
          : tenants.open(call.tenant, model);
      // A tenant with limits settles every answer: its stream is asked for usage.
      const prep = account?.tenantKey !== undefined ? this.prepSettled : this.prep;
      let request = prepareRequest(adapter, op, body, prep, account);
      if (this.cache !== undefined) request = this.cache.recording(options, request);
      const prefix = this.prefixOf(call, request);
      const sdkOptions = options as SdkRequestOptions | undefined;
      if (!goesStraight(this, call, request)) {
        return placeCall(this, call, request, { options: sdkOptions, prefix, open });
      }
      // Without a session, a cacheable prompt prefix is one (see `placeCall`).
      const sticky = call.sessionId ?? (this.provisioned.has(model) ? undefined : prefix);
      const fields = STRAIGHT_CALL;
      fields.adapter = adapter;
      fields.op = op;
      fields.request = request;
      fields.options = sdkOptions;
      fields.sessionId = sticky;
      fields.pool = this.registry.poolFor(model, call.required);
      fields.tags = call.tags;
      fields.required = call.required;
      const run = new Dispatch(this, fields);
      letGo(fields);
      const pending = sessionFromStore(this.registry, this.state, sticky);
      if (pending !== undefined) return pending.then(() => run.run());
      return open === undefined ? run.run() : run.open(open);
    } catch (error) {
      // Whatever threw, the straight path's call holds nothing of this one.
      letGo(STRAIGHT_CALL);
      return Promise.reject(error);
    }
  }

  /**
   * The call's cacheable prompt prefix, hashed once for the two that read it: a provisioned
   * deployment, which counts cached input as free (its answers teach which prefix it has cached,
   * and a call over it is charged its uncached part there), and cache affinity.
   */
  private prefixOf(call: CallRecord, request: PreparedRequest): string | undefined {
    const provisioned = this.provisioned.has(call.model);
    if (!(provisioned || this.cacheAffinity) || !request.metered) return undefined;
    if (call.entry.adapter.path[0] === 'embeddings') return undefined;
    const prefix = prefixKey(call.body, request.admission.input, call.tenant);
    if (provisioned && prefix !== undefined) {
      request.admission.cachePrefix ??= { key: prefix, tokens: CACHEABLE_TOKENS };
    }
    return prefix;
  }

  /**
   * What the response cache needs of a call it covers; `undefined` for a call it does not cover,
   * or one the router refuses anyway (which then fails as it would without a cache).
   */
  private cacheCall(call: CallRecord): CacheCall | undefined {
    const { adapter, op, opName } = call.entry;
    try {
      if (op.metered === false || !this.cache!.covers(adapter, call.model)) return undefined;
      const deployment = this.registry.poolFor(call.model)[0]!;
      if (deployment.provider !== adapter.provider) return undefined;
      return {
        adapter,
        opName,
        body: call.body,
        tenant: call.tenant,
        required: call.required,
        stream: call.stream,
        off: call.uncached,
        deployment,
      };
    } catch {
      return undefined;
    }
  }

  /** `retrieve(id)` and the like: to the deployment holding `id`, unmetered. */
  callHolding(
    entry: CallEntry,
    id: unknown,
    body: Record<string, unknown>,
    options: unknown,
  ): Promise<Answer> {
    try {
      const { adapter, op } = entry;
      if (this.closed) throw closedError(entry.surface);
      if (typeof id !== 'string' || id === '') {
        throw new TypeError(`${entry.surface} expects an id string as its first argument`);
      }
      const request = prepareRequest(adapter, op, body, this.prep);
      const sdkOptions = options as SdkRequestOptions | undefined;
      return this.pins.dispatch({ adapter, op, id, request, options: sdkOptions });
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

function closedError(what: string): SwitchboardError {
  return new SwitchboardError(
    `switchboard is closed: ${what} was called after close() (or the Nest application's close()). ` +
      'Make calls before closing, or build a new switchboard with createSwitchboard() for further calls.',
    { code: 'unavailable' },
  );
}

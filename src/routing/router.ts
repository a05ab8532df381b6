import type { SwitchboardLogger, SwitchboardOptions } from '../config/switchboard-options';
import { failoverPolicy, type FailoverPolicy } from '../failover/failover';
import type { ApiAdapter, ApiOperation, Surface } from '../providers/adapter';
import type { AttemptHooks, PreparedRequest } from '../providers/attempt-types';
import { PROVIDERS } from '../providers/index';
import { CapacityQueue, DEFAULT_MAX_QUEUED } from '../scheduling/capacity-queue';
import { LaneActivity } from '../scheduling/lanes';
import type { Answer, Deployment, SdkRequestOptions } from '../registry/deployment';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { DeploymentPicker } from '../selection/pick';
import { ModelState } from '../registry/model-state';
import { Deadlines } from '../runtime/deadlines';
import type { StateStore } from '../state/state-store';
import { clip } from '../errors/clip';
import { SwitchboardError } from '../switchboard.error';
import { GenAiTelemetry } from '../telemetry/gen-ai-telemetry';
import { GEN_AI_VALUES } from '../telemetry/gen-ai-conventions';
import type { AttemptTrace, GenAiOperationName } from '../telemetry/gen-ai-telemetry';
import type {
  SwitchboardMetrics,
  SwitchboardMetricsOptions,
} from '../telemetry/switchboard-metrics';
import { LocalTenantCounts } from '../tenants/tenant-counts';
import { Tenants } from '../tenants/tenants';
import type { SessionParams } from '../types';
import { allowsFallbacks, callBody, requiredTags, sessionIdOf, tagsOf } from './call-params';
import { contextWindows, fits, tokensNeeded, tooLongError } from './context-windows';
import { TrafficRecorder } from '../traffic/traffic-recorder';
import { Dispatch, type DispatchShared, type Pin } from './dispatch';
import { resolveFallbacks } from '../config/fallbacks';
import { prepareRequest } from './prepare-request';
import { CACHEABLE_TOKENS, prefixKey } from '../selection/cache-affinity';
import { ResponseChains, sessionFromStore } from './store-lookups';
import type { TagSet } from '../placement/tags';
import { responseCache } from '../cache/build-cache';
import type { CacheCall, ResponseCache } from '../cache/response-cache';

/** Calls that failed for their callers, per model. */
export interface FailedCalls {
  /** 429s, held back for want of room or from the upstream. */
  rateLimited: number;
  other: number;
}

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
export class Router implements DispatchShared {
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
  private readonly chains: ResponseChains;
  /** Answers served again, with `options.cache`. */
  private readonly cache: ResponseCache | undefined;
  private readonly defaultReservation: number;
  /** Whether calls without a session keep to where their prompt prefix is cached. */
  private readonly cacheAffinity: boolean;
  /** Models served by a provisioned (PTU) deployment somewhere, which counts cached input free. */
  private readonly provisioned: ReadonlySet<string>;
  readonly clock: () => number;
  /** Adapters with a surface, for the message of a call on the wrong one. */
  private readonly adapters: ApiAdapter[] = [];
  /** Per deployment, the state that calls without a model (retrievals) report to. */
  private readonly unmetered = new Map<Deployment, ModelState>();
  private readonly failedCalls = new Map<string, FailedCalls>();
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
    this.chains = new ResponseChains(options.maxResponses ?? 10_000, registry, state);
    this.defaultReservation = options.defaultReservation ?? 0;
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
    const queue = options.queue
      ? new CapacityQueue({ ...options.queue, clock: this.clock })
      : undefined;
    this.queue = queue;
    this.lanes = new LaneActivity({
      headroom: options.queue?.batchHeadroom,
      hold: options.queue?.headroomHold,
      clock: this.clock,
      waiting: queue === undefined ? undefined : (model) => queue.length(model, 'interactive'),
    });
    const tenants = new Tenants(options, {
      counts: state.tenantCounts?.() ?? new LocalTenantCounts(),
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
    tenants.onCost = (state, label, usd) => metrics.cost(state, label, usd);
    if (queue !== undefined) {
      // Room may have come back (a cooldown ended, a limit rose, a call ended at its cap): try the
      // model's line now rather than when it was expected.
      registry.onModelEvent((model, event) => {
        if (queue.length(model.name) === 0) return;
        if (event.type === 'up' || event.type === 'limit' || event.type === 'free') {
          queue.kick(model.name);
        } else if (event.type === 'spend' && (event.tokens < 0 || event.requests < 0)) {
          queue.kick(model.name);
        }
      });
    }
    // Tracer and meter taken now, as for the metrics: providers registered in main.ts count.
    const genAi = new GenAiTelemetry();
    const traffic = options.recordTraffic
      ? new TrafficRecorder(options.recordTraffic, this.logger, this.clock)
      : undefined;
    this.traffic = traffic;
    this.hooks = {
      sent: (model) => metrics.request(model),
      failed: (model, reason) => {
        metrics.failure(model, reason);
        // Nothing else says which deployment sent it: the caller sees the last attempt's error.
        if (reason === 'malformed_response') {
          this.logger.warn(
            `${model.deployment}/${model.name} answered with a body that is not valid JSON`,
          );
        }
      },
      faultyUsage: (model, fault) =>
        this.logger.warn(
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

  /**
   * The surface an adapter's facade calls: `sb.chat.completions.create(...)` is
   * `surface.call('create', ...)`.
   */
  surface(adapter: ApiAdapter): Surface {
    this.adapters.push(adapter);
    const promise = PROVIDERS[adapter.provider].promise;
    const name = `sb.${adapter.path.join('.')}`;
    const opFor = (op: string): ApiOperation => {
      const found = Object.prototype.hasOwnProperty.call(adapter.operations, op)
        ? adapter.operations[op]
        : undefined;
      if (found === undefined) throw new SwitchboardError(`${name} has no operation '${op}'`);
      return found;
    };
    return {
      name,
      call: (op, params, options) =>
        promise(this.call(adapter, opFor(op), name, op, params, options)),
      callHolding: (op, id, body, options) =>
        promise(this.callHolding(adapter, opFor(op), name, id, body, options)),
    };
  }

  /**
   * Calls that failed for their callers since the switchboard started, per model (after
   * failover). A call its caller aborted did not fail and is not counted.
   */
  failures(): Record<string, FailedCalls> {
    const out: Record<string, FailedCalls> = {};
    for (const [model, c] of this.failedCalls) out[model] = { ...c };
    return out;
  }

  /** Count a call that failed for its caller. */
  countFailure(model: string, error: unknown): void {
    this.metrics.callFailed(model, error);
    let counts = this.failedCalls.get(model);
    if (counts === undefined) {
      counts = { rateLimited: 0, other: 0 };
      this.failedCalls.set(model, counts);
    }
    if ((error as { status?: unknown } | null)?.status === 429) counts.rateLimited++;
    else counts.other++;
  }

  /**
   * Every later call fails at once; calls waiting for room fail with `closedWaiting`. Resolves
   * when the traffic record, if any, is written.
   */
  close(closedWaiting: () => unknown): Promise<void> {
    this.closed = true;
    this.queue?.close(closedWaiting);
    this.tenants?.close(closedWaiting);
    return this.traffic?.close() ?? Promise.resolve();
  }

  /** One balanced call, as `sb.<surface>.<opName>(params, options)` makes it (and `sb.fetch`). */
  call(
    adapter: ApiAdapter,
    op: ApiOperation,
    surface: string,
    opName: string,
    params: unknown,
    options: unknown,
  ): Promise<Answer> {
    const cache = this.cache;
    if (cache !== undefined && !this.closed && !cache.decided(options)) {
      const cached = this.cacheCall(adapter, op, surface, opName, params);
      if (cached !== undefined) {
        return cache.serve(cached, options, (decided) =>
          this.call(adapter, op, surface, opName, params, decided),
        );
      }
    }
    try {
      // The method's name (`sb.chat.completions.create()`) is spelled out only for an error.
      if (this.closed) throw closedError(`${surface}.${opName}()`);
      const body = callBody(surface, opName, params);
      const sessionId = sessionIdOf(params as object);
      const pool = this.registry.poolFor(body.model);
      if (pool[0]!.provider !== adapter.provider) throw this.wrongProvider(adapter, body.model);
      const model = body.model as string;
      const tenants = this.tenants;
      const tenant = (params as SessionParams).tenant;
      const account =
        tenants === undefined || op.metered === false ? undefined : tenants.open(tenant, model);
      // A tenant with limits settles every answer: its stream is asked for usage.
      let request = prepareRequest(adapter, op, body, this.defaultReservation, this.chains, {
        usage: account?.key !== undefined,
      });
      if (cache !== undefined) request = cache.recording(options, request);
      const sdkOptions = options as SdkRequestOptions | undefined;
      // A cacheable prompt prefix, hashed once for the two that read it: a provisioned
      // deployment, which counts cached input as free (its answers teach which prefix it has
      // cached, and a call over it is charged its uncached part there), and cache affinity.
      const provisioned = this.provisioned.has(model);
      const prefix =
        (provisioned || this.cacheAffinity) && request.metered && adapter.path[0] !== 'embeddings'
          ? prefixKey(body, request.admission.input, tenant)
          : undefined;
      if (provisioned && prefix !== undefined) {
        request.admission.cachePrefix ??= { key: prefix, tokens: CACHEABLE_TOKENS };
      }
      if (account !== undefined) request = { ...request, account };
      const tags = tagsOf(params as object);
      // A tenant's tags bind every call it makes, metered or not: a prompt stays where it may go.
      const required = requiredTags(params as object, tenants?.tagsOf(tenant));
      const chained = adapter.chain?.refersTo(body);
      if (chained !== undefined && account?.key === undefined) {
        const call = { id: chained, request, options: sdkOptions, model, sessionId, required };
        return this.pinned(adapter, op, call);
      }
      const allowed = allowsFallbacks(params as object);
      const fallbacks = this.fallbacks.size > 0 && allowed ? this.fallbacks.get(model) : undefined;
      // A call too long for its model goes to the first fallback whose window holds it.
      const windows = this.windows;
      let wider: string[] | undefined;
      if (windows !== undefined && request.metered) {
        const need = tokensNeeded(request.admission);
        if (!fits(windows, model, need)) {
          wider = (fallbacks ?? []).filter((m) => fits(windows, m, need));
          if (wider.length === 0) throw tooLongError(model, request.admission, windows, fallbacks);
        }
      }
      // Without a session, a cacheable prompt prefix is one: it keeps to where it is cached. Not
      // where a provisioned deployment serves the model: it is paid for whether used or not, so its
      // room goes first, before a prefix cached on a tier below it.
      const sticky = sessionId ?? (provisioned ? undefined : prefix);
      const pending = sessionFromStore(this.registry, this.state, sticky);
      const held = request;
      const dispatch = (target: string, rest: readonly string[] | undefined) => {
        const call = new Dispatch(this, {
          adapter,
          op,
          request: target === model ? held : { ...held, body: { ...held.body, model: target } },
          options: sdkOptions,
          sessionId: target === model ? sticky : sessionId,
          pool: this.registry.poolFor(target, required),
          fallbacks: rest,
          tags,
          required,
          filterFallbacks:
            this.contentFilterFallbacks.size > 0 && allowed
              ? this.contentFilterFallbacks.get(target)
              : undefined,
        });
        if (wider !== undefined && target === model) call.leaveModel('context_window', wider);
        return pending === undefined ? call.run() : pending.then(() => call.run());
      };
      if (account?.key === undefined) return dispatch(model, fallbacks);
      // A tenant with limits: its charge is taken first, for the call's model or, over the
      // budget, the first fallback whose price fits; what the call does not use goes back.
      const models = fallbacks === undefined ? [model] : [model, ...fallbacks];
      return tenants!
        .admit(
          account,
          request.admission,
          models,
          pool[0]!.errors.RateLimitError,
          sdkOptions?.signal,
        )
        .then((chosen) => {
          if (chained === undefined) return dispatch(chosen.model, chosen.fallbacks);
          const call = {
            id: chained,
            request: held,
            options: sdkOptions,
            model,
            sessionId,
            required,
          };
          return this.pinned(adapter, op, call);
        })
        .catch((error: unknown) => {
          account.end(error);
          throw error;
        });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * What the response cache needs of a call it covers; `undefined` for a call it does not cover,
   * or one the router refuses anyway (which then fails as it would without a cache).
   */
  private cacheCall(
    adapter: ApiAdapter,
    op: ApiOperation,
    surface: string,
    opName: string,
    params: unknown,
  ): CacheCall | undefined {
    try {
      const body = callBody(surface, opName, params);
      if (op.metered === false || !this.cache!.covers(adapter, body.model)) return undefined;
      const deployment = this.registry.poolFor(body.model as string)[0]!;
      if (deployment.provider !== adapter.provider) return undefined;
      const { tenant, cache } = params as SessionParams;
      return {
        adapter,
        opName,
        body,
        tenant,
        required: requiredTags(params as object, this.tenants?.tagsOf(tenant)),
        stream: op.streams ? op.streams(body) : body.stream === true,
        off: cache === false,
        deployment,
      };
    } catch {
      return undefined;
    }
  }

  /** `retrieve(id)` and the like: to the deployment holding `id`, unmetered. */
  callHolding(
    adapter: ApiAdapter,
    op: ApiOperation,
    name: string,
    id: unknown,
    body: Record<string, unknown>,
    options: unknown,
  ): Promise<Answer> {
    try {
      if (this.closed) throw closedError(name);
      if (typeof id !== 'string' || id === '') {
        throw new TypeError(`${name} expects an id string as its first argument`);
      }
      const request = prepareRequest(adapter, op, body, this.defaultReservation, this.chains);
      const call = { id, request, options: options as SdkRequestOptions | undefined };
      return this.pinned(adapter, op, call);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * A call that builds on (or reads) the stored object `id`: dispatched to the deployment that
   * created it, or failed with a {@link SwitchboardError} naming the id.
   */
  private pinned(adapter: ApiAdapter, op: ApiOperation, call: PinnedCall): Promise<Answer> {
    const holder = this.chains.holder(call.id);
    if (typeof holder !== 'object') return this.dispatchPinned(adapter, op, call, holder);
    return holder.then((name) => this.dispatchPinned(adapter, op, call, name));
  }

  private dispatchPinned(
    adapter: ApiAdapter,
    op: ApiOperation,
    call: PinnedCall,
    holder: string | undefined,
  ): Promise<Answer> {
    try {
      const pin = this.pinFor(adapter, call, holder);
      return new Dispatch(this, {
        adapter,
        op,
        request: call.request,
        options: call.options,
        sessionId: call.sessionId,
        pool: [pin.deployment],
        pin,
      }).run();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private pinFor(adapter: ApiAdapter, call: PinnedCall, holder: string | undefined): Pin {
    const { id, model, required } = call;
    let d = holder === undefined ? undefined : this.registry.deployments.get(holder);
    if (d === undefined) {
      // Where only one deployment could have created it, that one holds it.
      const candidates =
        model !== undefined
          ? this.registry.poolFor(model)
          : [...this.registry.deployments.values()].filter((x) => x.provider === adapter.provider);
      if (candidates.length !== 1) {
        throw new SwitchboardError(
          `No deployment is known to hold ${clip(id)}: it was not created through this switchboard, or it ` +
            `has been forgotten (maxResponses, or the state store's responseTtl). It is not sent to another deployment, which would answer 404.`,
        );
      }
      d = candidates[0]!;
    }
    // Where a call may go binds the chain it continues: its prompt and the stored context would
    // both reach a deployment the call's tags rule out.
    const missing = required?.tags.filter((tag) => !d.tags.includes(tag)) ?? [];
    if (missing.length > 0) {
      throw new SwitchboardError(
        `${clip(id)} lives on deployment ${d.name}, which lacks the tag${missing.length > 1 ? 's' : ''} ${missing.join(', ')} the call requires: it is not sent there. Start without previous_response_id on a deployment carrying ${required!.tags.join(', ')}.`,
        { code: 'invalid_request' },
      );
    }
    if (model === undefined)
      return { id, deployment: d, modelState: this.unmeteredState(d), model };
    const state = d.models.get(model);
    if (state === undefined) {
      throw new SwitchboardError(
        `${clip(id)} lives on deployment ${d.name}, which does not serve ${model}: use a model that ${d.name} serves, or start without previous_response_id`,
      );
    }
    return { id, deployment: d, modelState: state, model };
  }

  private unmeteredState(d: Deployment): ModelState {
    let state = this.unmetered.get(d);
    if (state === undefined) {
      // Not in the deployment's models: what happens to it changes no model's health.
      state = new ModelState({ name: '(unmetered)' }, d.name, this.clock);
      this.unmetered.set(d, state);
    }
    return state;
  }

  private wrongProvider(adapter: ApiAdapter, model: unknown): SwitchboardError {
    const provider = this.registry.models.get(model as string)!;
    const right = this.adapters
      .filter((a) => a.provider === provider)
      .map((a) => `sb.${a.path.join('.')}.create()`);
    return new SwitchboardError(
      `${String(model)} is served by ${provider} deployments only and cannot take a sb.${adapter.path.join('.')} call: use ${right.join(' or ')}`,
    );
  }
}

/** A call to the deployment holding the stored object `id`, and what binds it. */
interface PinnedCall {
  readonly id: string;
  readonly request: PreparedRequest;
  readonly options: SdkRequestOptions | undefined;
  /** The call's model; `undefined` for a retrieval. */
  readonly model?: string;
  readonly sessionId?: string;
  /** The tags a deployment must carry to take the call. */
  readonly required?: TagSet;
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

function closedError(what: string): SwitchboardError {
  return new SwitchboardError(
    `switchboard is closed: ${what} was called after close() (or the Nest application's close()). ` +
      'Make calls before closing, or build a new switchboard with createSwitchboard() for further calls.',
    { code: 'unavailable' },
  );
}

import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { SwitchboardLogger, SwitchboardOptions } from './config/switchboard-options';
import { validateOptions } from './config/validate-options';
import { failoverPolicy, type FailoverPolicy } from './failover/failover';
import type { ApiAdapter, ApiOperation, Surface, SurfacesOf } from './providers/adapter';
import { attempt, type AttemptHooks, type PreparedRequest } from './providers/attempt';
import { Deadlines } from './runtime/deadlines';
import { BUILTIN_ADAPTERS, PROVIDERS } from './providers/index';
import type { Answer, Deployment, SdkRequestOptions } from './registry/deployment';
import { resolveFallbacks } from './routing/fallbacks';
import { Dispatch, type DispatchShared } from './routing/dispatch';
import type { Admission } from './quota/admission';
import { CapacityQueue } from './quota/capacity-queue';
import { DeploymentRegistry, type ModelStats } from './registry/deployment-registry';
import { ModelState } from './registry/model-state';
import { Selector } from './selection/selector';
import { SessionAffinity, sessionKey } from './selection/session-affinity';
import { TwoRandomChoices } from './selection/two-random-choices';
import { peerFold } from './state/peer-report';
import { memoryState, type StateStore } from './state/state-store';
import { clip } from './errors/clip';
import { SwitchboardError } from './switchboard.error';
import { DEFAULT_MAX_COOLDOWN } from './registry/cooldown';
import { GenAiTelemetry } from './telemetry/gen-ai-telemetry';
import { SwitchboardMetrics } from './telemetry/switchboard-metrics';
import type { SessionParams } from './types';

export type { SessionParams } from './types';
export type { OpenAIRequestOptions } from './providers/openai/openai-deployment';
export type { AnthropicRequestOptions } from './providers/anthropic/anthropic-deployment';
export type { SwitchboardChatCompletions } from './providers/openai/chat';
export type { SwitchboardResponses } from './providers/openai/responses';
export type { SwitchboardEmbeddings } from './providers/openai/embeddings';
export type { SwitchboardMessages } from './providers/anthropic/messages';

/** The built-in surfaces: `chat.completions`, `responses`, `embeddings`, `messages`. */
export type BuiltinSurfaces = SurfacesOf<typeof BUILTIN_ADAPTERS>;

/** Names that a mounted surface must not take. */
const RESERVED = new Set(Object.getOwnPropertyNames(Object.prototype));

/** What calls that use no quota (retrievals, token counts) are charged. */
const UNMETERED: Admission = Object.freeze({ input: 0, output: 0 });

// The surfaces are built from the adapters at run time; this merge gives them their types.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface Switchboard extends BuiltinSurfaces {}

/**
 * A client-side load balancer over OpenAI / Azure OpenAI and Claude-on-Foundry deployments, called
 * exactly like the SDK clients. Inject it in Nest, or build one with {@link createSwitchboard}.
 *
 * @example
 * ```ts
 * const completion = await sb.chat.completions.create({
 *   model: 'gpt-4o-mini',
 *   messages: [{ role: 'user', content: 'Hello!' }],
 *   session_id: 'user-42',
 * });
 * const message = await sb.messages.create({
 *   model: 'claude-sonnet-5',
 *   max_tokens: 1024,
 *   messages: [{ role: 'user', content: 'Hello!' }],
 * });
 * ```
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class Switchboard implements OnModuleInit, OnApplicationShutdown {
  /** The deployments, their models and the session map. */
  readonly registry: DeploymentRegistry;
  readonly selector: Selector;
  readonly state: StateStore;
  readonly logger: SwitchboardLogger;
  private readonly policy: FailoverPolicy;
  private readonly metrics: SwitchboardMetrics;
  private readonly hooks: AttemptHooks;
  /** What every call's dispatch shares with this switchboard. */
  private readonly shared: DispatchShared;
  /**
   * Per model with fallbacks, every model its calls may fall back to, in the order they are tried
   * (`options.fallbacks` with chains followed).
   */
  readonly fallbacks: ReadonlyMap<string, readonly string[]>;
  /** Stored response id -> the deployment that created it. */
  private readonly chains: SessionAffinity;
  /** Facades by adapter, for {@link surface}. */
  private readonly surfaces = new Map<ApiAdapter, object>();
  /** The intermediate objects of mounted paths (`sb.chat`). */
  private readonly branches = new WeakSet<object>();
  /** Per deployment, the state that calls without a model (retrievals) report to. */
  private readonly unmetered = new Map<Deployment, ModelState>();
  /** Calls waiting for room, when `options.queue` is set. */
  readonly queue: CapacityQueue | undefined;
  private readonly defaultReservation: number;
  /** Calls that failed for their callers, per model: 429s (held back or upstream) and others. */
  private readonly failedCalls = new Map<string, { rateLimited: number; other: number }>();
  private readonly window: number;
  private readonly usageWindow: 'sliding' | 'fixed';
  private readonly clock: () => number;
  /** The longest cooldown (ms), also of one taken from a shared store. */
  private readonly maxCooldown: number;
  private resetTimer: NodeJS.Timeout | undefined;
  private started = false;
  private closed = false;

  /**
   * Builds the deployments and validates the options; timers start with {@link start} (or at
   * once with {@link createSwitchboard}; in Nest, when the module initializes).
   */
  constructor(options: SwitchboardOptions) {
    validateOptions(options);
    this.logger = options.logger ?? new Logger('Switchboard');
    this.selector = resolveSelector(options);
    this.registry = new DeploymentRegistry(options.deployments, this.selector, {
      maxSessions: options.maxSessions,
      clock: options.clock,
      logger: this.logger,
      maxCooldown: options.maxCooldown,
    });
    this.state = options.state ?? memoryState();
    this.policy = failoverPolicy(options.failover);
    this.chains = new SessionAffinity(options.maxResponses ?? 10_000);
    // Mounted before anything that needs closing is made: a bad adapter fails the constructor.
    for (const adapter of [...BUILTIN_ADAPTERS, ...(options.adapters ?? [])]) {
      this.mount(adapter as ApiAdapter);
    }
    this.window = options.ratelimitWindow ?? 60_000;
    this.usageWindow = options.usageWindow ?? 'sliding';
    this.clock = options.clock ?? Date.now;
    this.maxCooldown = options.maxCooldown ?? DEFAULT_MAX_COOLDOWN;
    this.fallbacks = resolveFallbacks(options.fallbacks);
    this.defaultReservation = options.defaultReservation ?? 0;
    this.queue = options.queue
      ? new CapacityQueue({ ...options.queue, clock: this.clock })
      : undefined;
    const queue = this.queue;
    if (queue !== undefined) {
      // Room may have come back: try the model's line now rather than when it was expected.
      this.registry.onModelEvent((state, event) => {
        if (queue.length(state.name) === 0) return;
        if (event.type === 'up' || event.type === 'limit') queue.kick(state.name);
        else if (event.type === 'spend' && (event.tokens < 0 || event.requests < 0)) {
          queue.kick(state.name);
        }
      });
    }
    this.metrics = new SwitchboardMetrics(this.registry, undefined, {
      queue: this.queue,
      fallbacks: this.fallbacks,
    });
    const metrics = this.metrics;
    // Tracer and meter taken now, as for the metrics: providers registered in main.ts count.
    const genAi = new GenAiTelemetry();
    this.hooks = {
      sent: (state) => metrics.request(state),
      failed: (state, reason) => metrics.failure(state, reason),
      staleSocketRetried: (state) => metrics.retry(state, 'stale_socket'),
      started: (deployment, state, request, context) =>
        genAi.forDeployment(deployment, state.name, request.body, context),
      deadlines: new Deadlines(),
      observed: (state, headers, admission, sentAt) => {
        state.observe(headers, admission, sentAt);
        metrics.answered(state, headers);
        // An answer may show room (the upstream counts less than we did).
        if (queue !== undefined && queue.length(state.name) > 0) queue.kick(state.name);
      },
    };
    this.shared = {
      registry: this.registry,
      state: this.state,
      logger: this.logger,
      queue: this.queue,
      policy: this.policy,
      metrics,
      hooks: this.hooks,
      countFailure: (model, error) => this.countFailure(model, error),
    };
  }

  /** Deployments by name, in configuration order. */
  get deployments(): ReadonlyMap<string, Deployment> {
    return this.registry.deployments;
  }

  /**
   * The deployment a call for `model` would go to now. With a `sessionId` the choice is
   * remembered for that session, as a call would remember it.
   *
   * @example
   * ```ts
   * const d = sb.selectDeployment({ model: 'gpt-4o-mini', sessionId: 'user-42' });
   * d.models.get('gpt-4o-mini')!.markDown();
   * ```
   */
  selectDeployment(query: { model: string; sessionId?: string }): Deployment {
    const sessionId = query.sessionId === undefined ? undefined : sessionKey(query.sessionId);
    const chosen = this.registry.select(query.model, sessionId);
    if (sessionId !== undefined) this.state.rememberSession?.(sessionId, chosen.name);
    return chosen;
  }

  /**
   * Per deployment and model: `{ util, tpm: "used/limit", rpm: "used/limit" }`, with the input
   * and output limits where they apply, the limits `learned` from the upstream's headers and what
   * it last reported left (`upstreamRemaining`).
   */
  stats(): Record<string, Record<string, ModelStats>> {
    return this.registry.stats();
  }

  /**
   * Calls that failed for their callers since the switchboard started, per model (after
   * failover): `rateLimited` are 429s, held back for want of room or from the upstream. A call
   * its caller aborted (queued, or in flight) did not fail and is not counted.
   *
   * @example
   * ```ts
   * sb.failures(); // { 'gpt-4o-mini': { rateLimited: 3, other: 0 } }
   * ```
   */
  failures(): Record<string, { rateLimited: number; other: number }> {
    const out: Record<string, { rateLimited: number; other: number }> = {};
    for (const [model, c] of this.failedCalls) out[model] = { ...c };
    return out;
  }

  /**
   * Forget the usage of the current window on every deployment. With a shared state store, this
   * instance's own usage; the other instances' comes back with the next sync.
   */
  resetUsage(): void {
    this.registry.resetUsage();
  }

  /** Starts the usage-reset timer and the state store; idempotent. */
  start(): this {
    if (this.started || this.closed) return this;
    this.started = true;
    // A shared store resets usage itself, at window boundaries every instance agrees on.
    if (this.window > 0 && !this.state.resetsUsage) {
      if (this.usageWindow === 'fixed') {
        this.resetTimer = setInterval(() => this.registry.resetUsage(), this.window);
        this.resetTimer.unref();
      } else {
        // A sliding window needs no timer: each model forgets old usage as it is read.
        for (const d of this.registry.deployments.values()) {
          for (const m of d.models.values()) m.slideUsage(this.window);
        }
      }
    }
    this.state.attach(this.registry, {
      logger: this.logger,
      ratelimitWindow: this.window,
      clock: this.clock,
      maxCooldown: this.maxCooldown,
      // What the other instances reported comes back as data; only this fold changes the models.
      onReport: peerFold(this.registry, { maxCooldown: this.maxCooldown }),
    });
    return this;
  }

  /** Nest lifecycle: the module initialized, {@link start}. */
  onModuleInit(): void {
    this.start();
  }

  /**
   * Nest lifecycle: the application has closed, {@link close}. Nest stops the HTTP server (and
   * waits for the requests it accepted) before it calls shutdown hooks, so those requests still
   * make their model calls; `onModuleDestroy` would run before that, and fail them.
   */
  onApplicationShutdown(): Promise<void> {
    return this.close();
  }

  /**
   * Closes the switchboard: stops timers, gauges and the state store. Calls and streams already in
   * flight finish as they would have (failover included); every call made afterwards rejects at
   * once with a {@link SwitchboardError} ("switchboard is closed"), without reaching a
   * deployment. Idempotent. In Nest, `app.close()` calls it.
   *
   * @example
   * ```ts
   * const sb = createSwitchboard({ deployments });
   * await sb.chat.completions.create({ model: 'gpt-4o-mini', messages });
   * await sb.close();
   * await sb.chat.completions.create({ model: 'gpt-4o-mini', messages }); // rejects: closed
   * ```
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.resetTimer);
    this.resetTimer = undefined;
    this.metrics.close();
    this.queue?.close(
      () =>
        new SwitchboardError('The switchboard closed while the call waited for room', {
          code: 'unavailable',
        }),
    );
    await this.state.close();
  }

  /**
   * The facade an adapter mounted on this switchboard (typed by the adapter), for adapters passed
   * in `options.adapters`.
   *
   * @example
   * ```ts
   * const sb = createSwitchboard({ deployments, adapters: [moderations] });
   * await sb.surface(moderations).create({ model: 'omni-moderation-latest', input: 'hi' });
   * ```
   */
  surface<Facade extends object>(adapter: ApiAdapter<Facade, never>): Facade {
    const facade = this.surfaces.get(adapter as ApiAdapter);
    if (facade === undefined) {
      throw new SwitchboardError(
        `The adapter '${adapter.name}' is not mounted on this switchboard: pass it in options.adapters`,
      );
    }
    return facade as Facade;
  }

  private mount(adapter: ApiAdapter): void {
    const where = `sb.${adapter.path.join('.')}`;
    if (adapter.path.length === 0 || adapter.path.some((k) => typeof k !== 'string' || k === '')) {
      throw new SwitchboardError(`Adapter '${adapter.name}' needs a path such as ['moderations']`);
    }
    let node = this as unknown as Record<string, unknown>;
    adapter.path.forEach((key, i) => {
      const taken = RESERVED.has(key) || key in node;
      if (i === adapter.path.length - 1) {
        if (taken) {
          throw new SwitchboardError(
            `Adapter '${adapter.name}' cannot be mounted at ${where}: that name is taken`,
          );
        }
        const facade = adapter.facade(this.surfaceFor(adapter));
        node[key] = facade;
        this.surfaces.set(adapter, facade);
        return;
      }
      if (!taken) node[key] = this.branch();
      else if (!this.isBranch(node[key])) {
        throw new SwitchboardError(
          `Adapter '${adapter.name}' cannot be mounted at ${where}: ${key} is taken`,
        );
      }
      node = node[key] as Record<string, unknown>;
    });
  }

  private branch(): object {
    const b = {};
    this.branches.add(b);
    return b;
  }

  private isBranch(value: unknown): boolean {
    return typeof value === 'object' && value !== null && this.branches.has(value);
  }

  private surfaceFor(adapter: ApiAdapter): Surface {
    const kit = PROVIDERS[adapter.provider];
    const name = `sb.${adapter.path.join('.')}`;
    const opFor = (op: string): ApiOperation => {
      const found = Object.prototype.hasOwnProperty.call(adapter.operations, op)
        ? adapter.operations[op]
        : undefined;
      if (found === undefined) {
        throw new SwitchboardError(`${name} has no operation '${op}'`);
      }
      return found;
    };
    return {
      name,
      call: (op, body, options) =>
        kit.promise(this.call(adapter, opFor(op), name, op, body, options)),
      callHolding: (op, id, body, options) =>
        kit.promise(this.callHolding(adapter, opFor(op), id, body, options)),
    };
  }

  private call(
    adapter: ApiAdapter,
    op: ApiOperation,
    surface: string,
    opName: string,
    params: unknown,
    options: unknown,
  ): Promise<Answer> {
    try {
      // The method's name (`sb.chat.completions.create()`) is spelled out only for an error.
      if (this.closed) throw closedError(`${surface}.${opName}()`);
      if (params === null || typeof params !== 'object') {
        throw new TypeError(`${surface}.${opName}() expects a params object as its first argument`);
      }
      // Copy the params only to take the switchboard's own fields out of them.
      let body = params as Record<string, unknown>;
      const rawSessionId = (params as SessionParams).session_id;
      const allowFallbacks = (params as SessionParams).fallbacks;
      if ('session_id' in params || 'fallbacks' in params) {
        const { session_id: _sessionId, fallbacks: _fallbacks, ...rest } = body;
        body = rest;
      }
      if (rawSessionId !== undefined && typeof rawSessionId !== 'string') {
        throw new TypeError(`session_id must be a string, got ${typeof rawSessionId}`);
      }
      // A long id is kept, looked up and shared as its hash: what the caller sends is unbounded.
      const sessionId = rawSessionId === undefined ? undefined : sessionKey(rawSessionId);
      if (allowFallbacks !== undefined && typeof allowFallbacks !== 'boolean') {
        throw new TypeError(
          `fallbacks must be false (no fallback model for this call) or true, got ${typeof allowFallbacks}`,
        );
      }
      const pool = this.registry.poolFor(body.model);
      if (pool[0]!.provider !== adapter.provider) throw this.wrongProvider(adapter, body.model);
      const request = this.prepare(adapter, op, body);
      const sdkOptions = options as SdkRequestOptions | undefined;
      const chained = adapter.chain?.refersTo(body);
      if (chained !== undefined) {
        return this.pinned(
          adapter,
          op,
          chained,
          request,
          sdkOptions,
          body.model as string,
          sessionId,
        );
      }
      const chain = allowFallbacks === false ? undefined : this.fallbacks.get(body.model as string);
      const lookup = this.state.lookupSession;
      if (
        sessionId !== undefined &&
        lookup &&
        this.registry.sessions.get(sessionId) === undefined
      ) {
        return lookup.call(this.state, sessionId).then(
          (name) => {
            if (name !== undefined && this.registry.deployments.has(name)) {
              this.registry.sessions.set(sessionId, name);
            }
            return this.dispatch(adapter, op, request, sdkOptions, sessionId, pool, chain);
          },
          () => this.dispatch(adapter, op, request, sdkOptions, sessionId, pool, chain),
        );
      }
      return this.dispatch(adapter, op, request, sdkOptions, sessionId, pool, chain);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private prepare(
    adapter: ApiAdapter,
    op: ApiOperation,
    body: Record<string, unknown>,
  ): PreparedRequest {
    const stream = op.streams ? op.streams(body) : body.stream === true;
    const metered = op.metered !== false;
    const admission = metered ? adapter.admission(body, this.defaultReservation) : UNMETERED;
    const chain = adapter.chain;
    const track = chain
      ? (value: unknown, d: Deployment) => {
          const id = chain.created(value, body);
          if (id !== undefined) this.rememberResponse(id, d.name);
        }
      : undefined;
    if (stream && adapter.prepareStream) {
      const prepared = adapter.prepareStream(body);
      return {
        body: prepared.body,
        stream,
        admission,
        metered,
        hideUsageEvents: prepared.hideUsageEvents,
        track,
      };
    }
    return { body, stream, admission, metered, hideUsageEvents: false, track };
  }

  private dispatch(
    adapter: ApiAdapter,
    op: ApiOperation,
    request: PreparedRequest,
    options: SdkRequestOptions | undefined,
    sessionId: string | undefined,
    pool: readonly Deployment[],
    fallbacks?: readonly string[],
  ): Promise<Answer> {
    return new Dispatch(
      this.shared,
      adapter,
      op,
      request,
      options,
      sessionId,
      pool,
      fallbacks,
    ).run();
  }

  private countFailure(model: string, error: unknown): void {
    this.metrics.callFailed(model, error);
    let counts = this.failedCalls.get(model);
    if (counts === undefined) {
      counts = { rateLimited: 0, other: 0 };
      this.failedCalls.set(model, counts);
    }
    if ((error as { status?: unknown } | null)?.status === 429) counts.rateLimited++;
    else counts.other++;
  }

  /** `retrieve(id)` and the like: to the deployment holding `id`, unmetered. */
  private callHolding(
    adapter: ApiAdapter,
    op: ApiOperation,
    id: unknown,
    body: Record<string, unknown>,
    options: unknown,
  ): Promise<Answer> {
    try {
      if (this.closed) throw closedError(`sb.${adapter.path.join('.')}`);
      if (typeof id !== 'string' || id === '') {
        throw new TypeError(
          `sb.${adapter.path.join('.')} expects an id string as its first argument`,
        );
      }
      const request = this.prepare(adapter, op, body);
      return this.pinned(
        adapter,
        op,
        id,
        request,
        options as SdkRequestOptions,
        undefined,
        undefined,
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * A call that builds on (or reads) the stored object `id`: it goes to the deployment that
   * created it, or fails with a {@link SwitchboardError} naming the id. Never to another
   * deployment, which would answer 404; so no failover either.
   */
  private pinned(
    adapter: ApiAdapter,
    op: ApiOperation,
    id: string,
    request: PreparedRequest,
    options: SdkRequestOptions | undefined,
    model: string | undefined,
    sessionId: string | undefined,
  ): Promise<Answer> {
    const known = this.chains.get(id);
    const lookup = this.state.lookupResponse;
    if (known !== undefined || !lookup) {
      return this.sendPinned(adapter, op, id, known, request, options, model, sessionId);
    }
    return lookup.call(this.state, id).then(
      (name) => {
        if (name !== undefined && this.registry.deployments.has(name)) this.chains.set(id, name);
        return this.sendPinned(adapter, op, id, name, request, options, model, sessionId);
      },
      () => this.sendPinned(adapter, op, id, undefined, request, options, model, sessionId),
    );
  }

  private sendPinned(
    adapter: ApiAdapter,
    op: ApiOperation,
    id: string,
    holder: string | undefined,
    request: PreparedRequest,
    options: SdkRequestOptions | undefined,
    model: string | undefined,
    sessionId: string | undefined,
  ): Promise<Answer> {
    try {
      let d = holder === undefined ? undefined : this.registry.deployments.get(holder);
      if (d === undefined) {
        // Where only one deployment could have created it, that one holds it.
        const candidates =
          model !== undefined
            ? this.registry.poolFor(model)
            : [...this.registry.deployments.values()].filter(
                (x) => x.provider === adapter.provider,
              );
        if (candidates.length !== 1) {
          throw new SwitchboardError(
            `No deployment is known to hold ${clip(id)}: it was not created through this switchboard, or it ` +
              `has been forgotten (maxResponses, or the state store's responseTtl). It is not sent to another deployment, which would answer 404.`,
          );
        }
        d = candidates[0]!;
      }
      if (model === undefined) {
        return attempt(d, this.unmeteredState(d), adapter, op, request, options, this.hooks);
      }
      const state = d.models.get(model);
      if (state === undefined) {
        throw new SwitchboardError(
          `${clip(id)} lives on deployment ${d.name}, which does not serve ${model}: use a model that ${d.name} serves, or start without previous_response_id`,
        );
      }
      if (!state.hasRoom(request.admission)) {
        const why = state.isCooling()
          ? `is cooling down for ${Math.ceil(state.cooldownRemaining / 1000)} s`
          : 'is at its quota';
        throw new SwitchboardError(
          `${clip(id)} lives on deployment ${d.name}, which ${why} for ${model}: retry later, or start without previous_response_id`,
        );
      }
      if (sessionId !== undefined) {
        this.registry.sessions.set(sessionId, d.name);
        this.state.rememberSession?.(sessionId, d.name);
      }
      return attempt(d, state, adapter, op, request, options, this.hooks);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private rememberResponse(id: string, deployment: string): void {
    this.chains.set(id, deployment);
    this.state.rememberResponse?.(id, deployment);
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
    const right = [...this.surfaces.keys()]
      .filter((a) => a.provider === provider)
      .map((a) => `sb.${a.path.join('.')}.create()`);
    return new SwitchboardError(
      `${String(model)} is served by ${provider} deployments only and cannot take a sb.${adapter.path.join('.')} call: use ${right.join(' or ')}`,
    );
  }
}

/**
 * Builds a switchboard outside Nest and starts its timers.
 *
 * @example
 * ```ts
 * const sb = createSwitchboard({
 *   deployments: [
 *     { provider: 'openai', name: 'east', baseURL: 'https://east.openai.azure.com/openai/v1/',
 *       apiKey: process.env.AZURE_OPENAI_API_KEY, models: [{ name: 'gpt-4o-mini', tpm: 30_000, rpm: 300 }] },
 *   ],
 * });
 * await sb.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] });
 * await sb.close();
 * ```
 */
export function createSwitchboard(options: SwitchboardOptions): Switchboard {
  return new Switchboard(options).start();
}

function resolveSelector(options: SwitchboardOptions): Selector {
  const s = options.selector;
  if (s === undefined) return new TwoRandomChoices({ random: options.random });
  if (s instanceof Selector) return s;
  if (typeof s === 'function') return new s();
  return s as Selector;
}

function closedError(what: string): SwitchboardError {
  return new SwitchboardError(
    `switchboard is closed: ${what} was called after close() (or the Nest application's close()). ` +
      'Make calls before closing, or build a new switchboard with createSwitchboard() for further calls.',
    { code: 'unavailable' },
  );
}

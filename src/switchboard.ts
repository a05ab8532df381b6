import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { SwitchboardOptions } from './config/switchboard-options';
import type { SwitchboardLogger } from './types';
import { validateOptions } from './config/validate-options';
import type { ApiAdapter, SurfacesOf } from './providers/adapter';
import { BUILTIN_ADAPTERS, PROVIDERS } from './providers/index';
import { keepClosed } from './runtime/kept-shapes';
import type { Deployment } from './registry/deployment';
import type { QueueView } from './scheduling/queue-view';
import { DeploymentRegistry, type ModelStats } from './registry/deployment-registry';
import { Router, type FailedCalls } from './routing/router';
import { DeploymentPicker } from './selection/pick';
import { Selector } from './selection/selector';
import { SessionAffinity, sessionKey } from './selection/session-affinity';
import { TwoRandomChoices } from './selection/two-random-choices';
import { createRelay, type SwitchboardFetch } from './relay/relay';
import { bytesOf } from './relay/sse-events';
import { peerFold } from './state/peer-report';
import { shareLearnedRules, type LearnedRulesSharing } from './state/learned-rules';
import { memoryState, type StateStore } from './state/state-store';
import { SwitchboardError } from './switchboard.error';
import { SwitchboardSurfaces } from './switchboard-surfaces';
import { DEFAULT_MAX_COOLDOWN } from './runtime/upstream-numbers';
import { SwitchboardMetrics } from './telemetry/switchboard-metrics';
import { isSimulated } from './config/simulate-option';
import { simulateInProcess, type Simulation } from './simulate/in-process';

/** The built-in surfaces: `chat.completions`, `responses`, `embeddings`, `messages`. */
export type BuiltinSurfaces = SurfacesOf<typeof BUILTIN_ADAPTERS>;

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
  /** @internal Picks the deployment of a call among the registry's, through the selector. */
  readonly picker: DeploymentPicker;
  readonly state: StateStore;
  readonly logger: SwitchboardLogger;
  private readonly metrics: SwitchboardMetrics;
  /** Where every call of the surfaces goes: params, preparation, store lookups, dispatch. */
  private readonly router: Router;
  /**
   * Per model with fallbacks, every model its calls may fall back to, in the order they are tried
   * (`options.fallbacks` with chains followed).
   */
  readonly fallbacks: ReadonlyMap<string, readonly string[]>;
  /** The facades mounted, for {@link surface}. */
  private readonly surfaces: SwitchboardSurfaces;
  /** Calls waiting for room, when `options.queue` is set. */
  readonly queue: QueueView | undefined;
  private readonly window: number;
  private readonly usageWindow: 'sliding' | 'fixed';
  private readonly clock: () => number;
  /** The longest cooldown (ms), also of one taken from a shared store. */
  private readonly maxCooldown: number;
  private resetTimer: NodeJS.Timeout | undefined;
  private started = false;
  private closed = false;
  /** With `simulate`: the simulated upstream serving every deployment, closed with the switchboard. */
  private readonly simulation: Simulation | undefined;
  /** The rules the upstreams taught, shared through the state store (when it shares values). */
  private learnedRules: LearnedRulesSharing | undefined;
  /** When readiness holds (`health.ready`): while any model, or every model, can be served. */
  readonly ready: 'any' | 'all';

  /**
   * A `fetch` for any client library that takes one (the AI SDK, LangChain, the `openai` and
   * `@anthropic-ai/sdk` clients): OpenAI- and Anthropic-wire requests, balanced and accounted as
   * the methods above are; the URL's host and the client's key are ignored, the path names the
   * API, `x-session-id` is the session. Bound: pass it on as it is.
   *
   * @example
   * ```ts
   * const openai = createOpenAI({ apiKey: 'unused', fetch: sb.fetch }); // @ai-sdk/openai
   * const { text } = await generateText({ model: openai.chat('gpt-4o-mini'), prompt: 'Hi' });
   * ```
   */
  readonly fetch: SwitchboardFetch;

  /**
   * Builds the deployments and validates the options; timers start with {@link start} (or at
   * once with {@link createSwitchboard}; in Nest, when the module initializes).
   */
  constructor(options: SwitchboardOptions) {
    validateOptions(options);
    this.logger = options.logger ?? new Logger('Switchboard');
    this.simulation = isSimulated(options) ? simulateInProcess(options, this.logger) : undefined;
    if (this.simulation !== undefined) options = this.simulation.options;
    this.ready = options.health?.ready ?? 'any';
    this.selector = resolveSelector(options);
    this.registry = new DeploymentRegistry(options.deployments, {
      builders: PROVIDERS,
      sessions: new SessionAffinity(options.maxSessions ?? 1024),
      clock: options.clock,
      logger: this.logger,
      maxCooldown: options.maxCooldown,
      quotaPools: options.quotaPools,
    });
    this.picker = new DeploymentPicker(
      this.registry,
      this.selector,
      options.clock ?? Date.now,
      this.logger,
    );
    this.state = options.state ?? memoryState();
    this.maxCooldown = options.maxCooldown ?? DEFAULT_MAX_COOLDOWN;
    this.router = new Router(options, {
      registry: this.registry,
      picker: this.picker,
      state: this.state,
      logger: this.logger,
      wireBytes: bytesOf,
      metrics: (queue, fallbacks, costs) =>
        new SwitchboardMetrics(this.registry, undefined, {
          queue,
          fallbacks,
          costs,
          contentFilterFallbacks: options.contentFilterFallbacks,
        }),
    });
    this.metrics = this.router.metrics;
    this.fallbacks = this.router.fallbacks;
    this.queue = this.router.queue;
    const router = this.router;
    this.fetch = createRelay({
      registry: this.registry,
      secrets: options.deployments.flatMap((d) => (typeof d.apiKey === 'string' ? [d.apiKey] : [])),
      warn: (line) => this.logger.warn(line),
      call: (adapter, op, params, callOptions) =>
        router.call({ adapter, op, surface: 'sb', opName: 'fetch' }, params, callOptions),
      callHolding: (adapter, op, id, body, callOptions) =>
        router.callHolding(
          { adapter, op, surface: `sb.${adapter.path.join('.')}`, opName: 'fetch' },
          id,
          body,
          callOptions,
        ),
    });
    this.window = options.ratelimitWindow ?? 60_000;
    this.usageWindow = options.usageWindow ?? 'sliding';
    this.clock = options.clock ?? Date.now;
    this.surfaces = new SwitchboardSurfaces(this, (adapter) => router.surface(adapter));
    try {
      for (const adapter of [...BUILTIN_ADAPTERS, ...(options.adapters ?? [])]) {
        this.surfaces.mount(adapter as ApiAdapter);
      }
    } catch (error) {
      // A bad adapter fails the constructor: what was made to be closed is closed.
      this.metrics.close();
      throw error;
    }
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
    const chosen = this.picker.select(query.model, sessionId);
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
  failures(): Record<string, FailedCalls> {
    return this.router.failures();
  }

  /**
   * USD spent per tenant since the switchboard started, in this process: each answer priced from
   * the usage it reported (`pricing`), under a tenant named in `tenants`, else `other`, as the
   * `switchboard_cost_usd_total` counter labels it. Every named tenant and `other` are listed from
   * the start; `{}` without `pricing`.
   *
   * @example
   * ```ts
   * sb.costs(); // { acme: 0.0421, globex: 0, other: 0.0007 }
   * ```
   */
  costs(): Record<string, number> {
    return this.router.tenants?.costs() ?? {};
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
          for (const m of d.models.values()) m.quota.slide(this.window);
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
    const values = this.state.sharedValues?.();
    const context = { clock: this.clock, logger: this.logger };
    this.learnedRules = values && shareLearnedRules(values, this.registry, context);
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
    this.learnedRules?.close();
    const written = this.router.close(
      () =>
        new SwitchboardError('The switchboard closed while the call waited for room', {
          code: 'unavailable',
        }),
    );
    await Promise.all([written, this.state.close(), this.simulation?.close()]);
    keepClosed(this);
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
    return this.surfaces.get(adapter);
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

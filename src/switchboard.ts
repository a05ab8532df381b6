import { Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Anthropic } from '@anthropic-ai/sdk';
import type {
  ExtractParsedContentFromParams as ExtractParsedMessageContent,
  ParsedMessage,
} from '@anthropic-ai/sdk/lib/parser';
import type {
  Message,
  MessageCreateParamsBase,
  MessageCreateParamsNonStreaming,
  MessageCreateParamsStreaming,
  RawMessageStreamEvent,
} from '@anthropic-ai/sdk/resources/messages';
import type { Stream as AnthropicStream } from '@anthropic-ai/sdk/streaming';
import type { OpenAI } from 'openai';
import type { ExtractParsedContentFromParams } from 'openai/lib/parser';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsBase,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionParseParams,
  ParsedChatCompletion,
} from 'openai/resources/chat/completions';
import type { Stream as OpenAIStream } from 'openai/streaming';
import type { SwitchboardLogger, SwitchboardOptions } from './config/switchboard-options';
import { validateOptions } from './config/validate-options';
import { failover, failoverPolicy, type FailoverPolicy } from './failover/failover';
import { attempt, type AttemptHooks } from './providers/attempt';
import { resolveFallbacks } from './routing/fallbacks';
import { routeCall, type Route } from './routing/route-call';
import type { Deployment, Operation, Provider, SdkRequestOptions } from './registry/deployment';
import { DeploymentRegistry, type ModelStats } from './registry/deployment-registry';
import { Selector } from './selection/selector';
import { TwoRandomChoices } from './selection/two-random-choices';
import { memoryState, type StateStore } from './state/state-store';
import { SwitchboardError } from './switchboard.error';
import { GenAiTelemetry, type AttemptContext } from './telemetry/gen-ai-telemetry';
import { SwitchboardMetrics } from './telemetry/switchboard-metrics';

/** The switchboard's own addition to every call's params. */
export interface SessionParams {
  /** Calls with the same session id stay on one deployment while it is healthy (prompt caches). */
  session_id?: string;
  /** `false`: this call goes to the model it names or fails, whatever `options.fallbacks` says. */
  fallbacks?: boolean;
}

/** The `openai` client's request options (`signal`, `headers`, `timeout`, ...). */
export type OpenAIRequestOptions = NonNullable<
  Parameters<OpenAI['chat']['completions']['create']>[1]
>;
/** The `@anthropic-ai/sdk` client's request options (`signal`, `headers`, `timeout`, ...). */
export type AnthropicRequestOptions = NonNullable<Parameters<Anthropic['messages']['create']>[1]>;

/** `sb.chat.completions`: the `openai` client's `chat.completions`, balanced. */
export interface SwitchboardChatCompletions {
  create(
    body: ChatCompletionCreateParamsNonStreaming & SessionParams,
    options?: OpenAIRequestOptions,
  ): Promise<ChatCompletion>;
  create(
    body: ChatCompletionCreateParamsStreaming & SessionParams,
    options?: OpenAIRequestOptions,
  ): Promise<OpenAIStream<ChatCompletionChunk>>;
  create(
    body: ChatCompletionCreateParamsBase & SessionParams,
    options?: OpenAIRequestOptions,
  ): Promise<OpenAIStream<ChatCompletionChunk> | ChatCompletion>;
  parse<Params extends ChatCompletionParseParams, ParsedT = ExtractParsedContentFromParams<Params>>(
    body: Params & SessionParams,
    options?: OpenAIRequestOptions,
  ): Promise<ParsedChatCompletion<ParsedT>>;
}

/** `sb.messages`: the `@anthropic-ai/sdk` client's `messages`, balanced. */
export interface SwitchboardMessages {
  create(
    body: MessageCreateParamsNonStreaming & SessionParams,
    options?: AnthropicRequestOptions,
  ): Promise<Message>;
  create(
    body: MessageCreateParamsStreaming & SessionParams,
    options?: AnthropicRequestOptions,
  ): Promise<AnthropicStream<RawMessageStreamEvent>>;
  create(
    body: MessageCreateParamsBase & SessionParams,
    options?: AnthropicRequestOptions,
  ): Promise<AnthropicStream<RawMessageStreamEvent> | Message>;
  parse<Params extends MessageCreateParamsNonStreaming>(
    body: Params & SessionParams,
    options?: AnthropicRequestOptions,
  ): Promise<ParsedMessage<ExtractParsedMessageContent<Params>>>;
}

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
export class Switchboard implements OnModuleInit, OnModuleDestroy {
  readonly chat: { readonly completions: SwitchboardChatCompletions };
  readonly messages: SwitchboardMessages;
  /** The deployments, their models and the session map. */
  readonly registry: DeploymentRegistry;
  readonly selector: Selector;
  readonly state: StateStore;
  readonly logger: SwitchboardLogger;
  private readonly policy: FailoverPolicy;
  private readonly metrics: SwitchboardMetrics;
  private readonly hooks: AttemptHooks;
  /**
   * Per model with fallbacks, every model its calls may fall back to, in the order they are tried
   * (`options.fallbacks` with chains followed).
   */
  readonly fallbacks: ReadonlyMap<string, readonly string[]>;
  private readonly window: number;
  private readonly usageWindow: 'sliding' | 'fixed';
  private readonly clock: () => number;
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
    });
    this.state = options.state ?? memoryState();
    this.policy = failoverPolicy(options.failover);
    this.window = options.ratelimitWindow ?? 60_000;
    this.usageWindow = options.usageWindow ?? 'sliding';
    this.clock = options.clock ?? Date.now;
    this.fallbacks = resolveFallbacks(options.fallbacks);
    this.metrics = new SwitchboardMetrics(this.registry);
    const metrics = this.metrics;
    // Tracer and meter taken now, as for the metrics: providers registered in main.ts count.
    const genAi = new GenAiTelemetry();
    this.hooks = {
      sent: (state) => metrics.request(state),
      failed: (state, reason) => metrics.failure(state, reason),
      staleSocketRetried: (state) => metrics.retry(state, 'stale_socket'),
      started: (deployment, state, request, context) =>
        genAi.forDeployment(deployment, state.name, request.body, context),
    };
    this.chat = {
      completions: {
        create: (body: object, options?: object) => this.call('openai', 'create', body, options),
        parse: (body: object, options?: object) => this.call('openai', 'parse', body, options),
      } as SwitchboardChatCompletions,
    };
    this.messages = {
      create: (body: object, options?: object) => this.call('anthropic', 'create', body, options),
      parse: (body: object, options?: object) => this.call('anthropic', 'parse', body, options),
    } as SwitchboardMessages;
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
    const chosen = this.registry.select(query.model, query.sessionId);
    if (query.sessionId !== undefined) this.state.rememberSession?.(query.sessionId, chosen.name);
    return chosen;
  }

  /** Per deployment and model: `{ util, tpm: "used/limit", rpm: "used/limit" }`. */
  stats(): Record<string, Record<string, ModelStats>> {
    return this.registry.stats();
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
    });
    return this;
  }

  /** Nest lifecycle: the module initialized, {@link start}. */
  onModuleInit(): void {
    this.start();
  }

  /** Nest lifecycle: the application closes, {@link close}. */
  onModuleDestroy(): Promise<void> {
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
    await this.state.close();
  }

  private call(api: Provider, op: Operation, params: object, options?: object): Promise<unknown> {
    try {
      if (this.closed) throw closedError(api, op);
      if (params === null || typeof params !== 'object') {
        throw new TypeError(`${describe(api, op)} expects a params object as its first argument`);
      }
      // Copy the params only to take the switchboard's own fields out of them.
      let body = params as Record<string, unknown>;
      const sessionId = (params as SessionParams).session_id;
      const allowFallbacks = (params as SessionParams).fallbacks;
      if ('session_id' in params || 'fallbacks' in params) {
        const { session_id: _sessionId, fallbacks: _fallbacks, ...rest } = body;
        body = rest;
      }
      if (sessionId !== undefined && typeof sessionId !== 'string') {
        throw new TypeError(`session_id must be a string, got ${typeof sessionId}`);
      }
      if (allowFallbacks !== undefined && typeof allowFallbacks !== 'boolean') {
        throw new TypeError(
          `fallbacks must be false (no fallback model for this call) or true, got ${typeof allowFallbacks}`,
        );
      }
      const pool = this.registry.poolFor(body.model, api);
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
            return this.dispatch(op, body, options as SdkRequestOptions, sessionId, pool, chain);
          },
          () => this.dispatch(op, body, options as SdkRequestOptions, sessionId, pool, chain),
        );
      }
      return this.dispatch(op, body, options as SdkRequestOptions, sessionId, pool, chain);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private dispatch(
    op: Operation,
    body: Record<string, unknown>,
    options: SdkRequestOptions | undefined,
    sessionId: string | undefined,
    pool: readonly Deployment[],
    fallbacks?: readonly string[],
  ): Promise<unknown> {
    if (fallbacks !== undefined) {
      return this.dispatchWithFallbacks(op, body, options, sessionId, pool, fallbacks);
    }
    const model = body.model as string;
    const first = this.registry.select(model, sessionId);
    if (sessionId !== undefined) this.state.rememberSession?.(sessionId, first.name);
    const promise = attempt(
      first,
      first.models.get(model)!,
      op,
      first.prepare(body),
      options,
      this.hooks,
    );
    if (this.policy.attempts <= 1) return promise;
    return promise.catch((error: unknown) => {
      const tried = new Set<Deployment>([first]);
      let last = first;
      let context: AttemptContext = { attempt: 1 };
      return failover(
        error,
        () => {
          const d = this.registry.select(model, sessionId, tried);
          tried.add(d);
          last = d;
          if (sessionId !== undefined) this.state.rememberSession?.(sessionId, d.name);
          return attempt(
            d,
            d.models.get(model)!,
            op,
            d.prepare(body),
            options,
            this.hooks,
            context,
          );
        },
        this.policy,
        pool[0]!.errors,
        options?.signal,
        (n, _delay, reason) => {
          context = { attempt: n, failoverReason: reason };
          this.metrics.retry(last.models.get(model)!, reason);
        },
      );
    });
  }

  /** {@link dispatch} for a model with fallbacks: each attempt is routed by {@link routeCall}. */
  private dispatchWithFallbacks(
    op: Operation,
    body: Record<string, unknown>,
    options: SdkRequestOptions | undefined,
    sessionId: string | undefined,
    pool: readonly Deployment[],
    fallbacks: readonly string[],
  ): Promise<unknown> {
    const model = body.model as string;
    const tried = new Set<Deployment>();
    const next = (): Promise<unknown> => {
      const route = this.fallbackRoute(model, fallbacks, sessionId, tried);
      tried.add(route.deployment);
      if (sessionId !== undefined) this.state.rememberSession?.(sessionId, route.deployment.name);
      return this.attemptRoute(route, model, op, body, options);
    };
    const promise = next();
    if (this.policy.attempts <= 1) return promise;
    return promise.catch((error: unknown) =>
      failover(error, next, this.policy, pool[0]!.errors, options?.signal),
    );
  }

  /** {@link routeCall}, with a debug line when a fallback model takes the attempt. */
  private fallbackRoute(
    model: string,
    fallbacks: readonly string[],
    sessionId: string | undefined,
    tried?: ReadonlySet<Deployment>,
  ): Route {
    const route = routeCall(this.registry, model, fallbacks, sessionId, tried);
    if (route.model !== model) {
      this.logger.debug?.(
        `No deployment of ${model} can take the call: falling back to ${route.model} on ${route.deployment.name}`,
      );
    }
    return route;
  }

  /** One attempt on a route; a fallback's replaces the params' `model` for this attempt only. */
  private attemptRoute(
    route: Route,
    requested: string,
    op: Operation,
    body: Record<string, unknown>,
    options: SdkRequestOptions | undefined,
  ): Promise<unknown> {
    const { deployment, model } = route;
    const state = deployment.models.get(model)!;
    if (model === requested) {
      return attempt(deployment, state, op, deployment.prepare(body), options, this.hooks);
    }
    const metrics = this.metrics;
    const hooks: AttemptHooks = {
      sent: (s) => metrics.request(s, requested),
      failed: this.hooks.failed,
    };
    return attempt(deployment, state, op, deployment.prepare({ ...body, model }), options, hooks);
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

function closedError(api: Provider, op: Operation): SwitchboardError {
  return new SwitchboardError(
    `switchboard is closed: ${describe(api, op)} was called after close() (or the Nest application's close()). ` +
      'Make calls before closing, or build a new switchboard with createSwitchboard() for further calls.',
  );
}

function describe(api: Provider, op: Operation): string {
  return api === 'openai' ? `sb.chat.completions.${op}()` : `sb.messages.${op}()`;
}

import type { LoggerService, Type } from '@nestjs/common';
import type { FailureReason } from '../failover/classify';
import type { Selector } from '../selection/selector';
import type { StateStore } from '../state/state-store';

/**
 * One model served by a deployment, with its quota.
 *
 * @example
 * ```ts
 * const model: ModelConfig = { name: 'gpt-4o-mini', tpm: 30_000, rpm: 300 };
 * ```
 */
export interface ModelConfig {
  /** Model (or Azure deployment) name that callers pass as `model`. */
  name: string;
  /** Tokens per minute this deployment allows for the model; 0 or absent = unlimited. */
  tpm?: number;
  /** Requests per minute this deployment allows for the model; 0 or absent = unlimited. */
  rpm?: number;
  /**
   * Input tokens per minute (Claude on Foundry counts input, cache writes included, apart from
   * output); 0 or absent = not limited apart, unless the upstream's headers report a limit.
   */
  itpm?: number;
  /** Output tokens per minute (Claude on Foundry), reserved from `max_tokens` at admission. */
  otpm?: number;
  /** How long (ms) the model is avoided after a 429 or a dropped connection. Default 10 000. */
  cooldown?: number;
  /** Overrides the deployment's `priority` for this model: its tier, 0 = most preferred. */
  priority?: number;
  /** Overrides the deployment's `weight` for this model within its tier. */
  weight?: number;
}

/**
 * Where a deployment stands in its model's routing: `priority` picks the tier (lower is preferred;
 * the next tier only takes what the ones before cannot), `weight` shares traffic within a tier.
 *
 * @example
 * ```ts
 * const ptu: RoutingConfig = { priority: 0 }; // provisioned throughput: keep it full
 * const payg: RoutingConfig = { priority: 1, weight: 2 }; // takes the overflow
 * ```
 */
export interface RoutingConfig {
  /** Tier of the deployment, a non-negative integer; 0 (the default) is the most preferred. */
  priority?: number;
  /** Share of traffic within its tier against the other deployments there; positive, default 1. */
  weight?: number;
}

/** An API key, or a function that returns a fresh one (for Microsoft Entra ID tokens). */
export type ApiKey = string | (() => Promise<string>);

/**
 * An OpenAI or Azure OpenAI (v1 API) deployment.
 *
 * @example
 * ```ts
 * const east: OpenAIConfig = {
 *   provider: 'openai',
 *   name: 'east',
 *   baseURL: 'https://east.openai.azure.com/openai/v1/',
 *   apiKey: process.env.AZURE_OPENAI_API_KEY,
 *   models: [{ name: 'gpt-4o-mini', tpm: 30_000, rpm: 300 }],
 * };
 * ```
 */
export interface OpenAIConfig extends RoutingConfig {
  provider: 'openai';
  /** Unique name of the deployment; shows in stats, logs and metrics. */
  name: string;
  /** Azure: `https://<resource>.openai.azure.com/openai/v1/`; absent = api.openai.com. */
  baseURL?: string;
  apiKey?: ApiKey;
  /** Per-request deadline in ms (the SDK's `timeout`). Default 30 000. */
  timeout?: number;
  models: ModelConfig[];
}

/**
 * A Claude deployment on Azure AI Foundry (Anthropic Messages API).
 *
 * @example
 * ```ts
 * const foundry: AnthropicConfig = {
 *   provider: 'anthropic',
 *   name: 'foundry1',
 *   resource: 'my-foundry-resource',
 *   apiKey: process.env.FOUNDRY_API_KEY,
 *   models: [{ name: 'claude-sonnet-5', tpm: 30_000, rpm: 300 }],
 * };
 * ```
 */
export interface AnthropicConfig extends RoutingConfig {
  provider: 'anthropic';
  name: string;
  /** Foundry resource: requests go to `https://<resource>.services.ai.azure.com/anthropic/`. */
  resource?: string;
  /** Wins over `resource` (proxies, tests). One of the two is required. */
  baseURL?: string;
  /** A string is sent as `x-api-key`; a function's token is sent as `Authorization: Bearer`. */
  apiKey?: ApiKey;
  timeout?: number;
  models: ModelConfig[];
}

/** Either kind of deployment. */
export type DeploymentConfig = OpenAIConfig | AnthropicConfig;

/**
 * When and how a failed call moves to another deployment.
 *
 * @example
 * ```ts
 * const failover: FailoverOptions = {
 *   attempts: 3,
 *   delay: (_err, attempt) => 100 * attempt,
 *   onRetry: (attempt, delay, reason) => logger.warn(`attempt ${attempt} in ${delay} ms (${reason})`),
 * };
 * ```
 */
export interface FailoverOptions {
  /** Total attempts per call, the first included. Default 2; 1 disables failover. */
  attempts?: number;
  /** Wait before each further attempt, in ms, or a function of the error and attempt number (2, 3, ...). Default 0. */
  delay?: number | ((error: unknown, attempt: number) => number);
  /** Replaces the default decision of which errors are worth another attempt. */
  retryIf?: (error: unknown) => boolean;
  /**
   * Told of each further attempt of a call before its wait begins: the attempt's number (2, 3,
   * ...), the wait in ms, why the previous attempt failed, and its error. For logs and metrics;
   * it must not throw (an exception would fail the call).
   */
  onRetry?: (attempt: number, delay: number, reason: FailureReason, error: unknown) => void;
}

/**
 * Waiting for room instead of failing fast when no deployment of a model has room for a call.
 *
 * @example
 * ```ts
 * const queue: QueueOptions = { maxWait: 5_000, maxQueued: 1_000 };
 * ```
 */
export interface QueueOptions {
  /** Longest wait in ms; past it the call fails with the SDK's `RateLimitError`. */
  maxWait: number;
  /** Most calls waiting per model; one more fails at once. Default: no bound. */
  maxQueued?: number;
}

/** Where log lines go; Nest's `Logger` fits. */
export type SwitchboardLogger = Pick<LoggerService, 'log' | 'warn' | 'error'> &
  Partial<Pick<LoggerService, 'debug' | 'verbose'>>;

/**
 * Everything a switchboard is built from.
 *
 * @example
 * ```ts
 * const sb = createSwitchboard({
 *   deployments: [east, west, foundry],
 *   failover: { attempts: 3 },
 *   ratelimitWindow: 60_000,
 * });
 * ```
 */
export interface SwitchboardOptions {
  deployments: DeploymentConfig[];
  /** Picks among healthy deployments. Default `new TwoRandomChoices()`. In Nest, a class is resolved through DI. */
  selector?: Selector | Type<Selector>;
  failover?: FailoverOptions;
  /** ms over which usage counts against `tpm` and `rpm` (Azure's quota minute); default 60 000; 0 never forgets usage. */
  ratelimitWindow?: number;
  /**
   * How usage leaves the window. `'sliding'` (default): usage older than `ratelimitWindow` is
   * forgotten bit by bit (500 ms buckets), and requests of the last sixth of the window also count
   * against `rpm / 6`, as Azure enforces RPM per 10 s. `'fixed'`: all usage is reset every
   * `ratelimitWindow` by a timer, as the Python original does.
   */
  usageWindow?: 'sliding' | 'fixed';
  /**
   * When no deployment has room for a call by the upstream's own count: absent (default), fail at
   * once with the SDK's `RateLimitError` (status 429, `retry-after` = when room is expected); with
   * `{ maxWait, maxQueued }`, wait in line (first come, first served) for up to `maxWait` ms.
   */
  queue?: QueueOptions;
  /**
   * Output tokens charged at admission for a call that sets no `max_tokens` /
   * `max_completion_tokens`. Default 0: the upstream's reservation for uncapped calls differs per
   * model, and its rate-limit headers show it to the switchboard anyway.
   */
  defaultReservation?: number;
  /**
   * Models to use when no deployment of the requested one can take a call (all cooling, none with
   * room, or every attempt of the call failed), in order of preference. A fallback's own
   * fallbacks follow it. Opt out per call with `fallbacks: false` beside `session_id`.
   */
  fallbacks?: Record<string, string[]>;
  /** How many session ids are remembered (LRU). Default 1024. */
  maxSessions?: number;
  /** Where usage, cooldowns and sessions live: `memoryState()` (default) or a shared store. */
  state?: StateStore;
  /** Log sink; default Nest's `Logger` with context `Switchboard`. */
  logger?: SwitchboardLogger;
  /** Clock in ms (tests inject a fake one). Default `Date.now`. */
  clock?: () => number;
  /** Random source in [0, 1) (tests inject a seeded one). Default `Math.random`. */
  random?: () => number;
}

import type { LoggerService } from '@nestjs/common';

/*
 * Plain configuration and data types. This module imports nothing of the library's own, so every
 * other module can import it without forming a cycle.
 */

/**
 * One model served by a deployment, with its quota.
 *
 * @example
 * ```ts
 * const model: ModelConfig = { name: 'gpt-4o-mini', tpm: 30_000, rpm: 300 };
 * const named: ModelConfig = { name: 'gpt-4o', deployment: 'gpt4o-east', tpm: 450_000 };
 * ```
 */
export interface ModelConfig {
  /**
   * The model's name as callers pass it (`model`): stats, metrics, health, sessions, fallbacks
   * and errors all use it.
   */
  name: string;
  /**
   * The upstream's name for it, sent as `model` on the wire: the Azure OpenAI or Foundry
   * deployment name, which teams choose per resource (`gpt4o-east`). Default: `name`.
   */
  deployment?: string;
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
  /**
   * The short window the upstream enforces `rpm` over: `'10s'` (`rpm / 6` per 10 s, Azure
   * OpenAI's usual) or `'1s'` (`rpm / 60` per second). Default: learned from Azure's
   * `x-ratelimit-limit-requests` (which speaks of that window), or from a 429 that says the call
   * rate limit was hit and asks to wait at most a second while the 10 s count had room; else
   * `'10s'`.
   */
  requestWindow?: '1s' | '10s';
  /**
   * Output tokens the upstream reserves for a call that sets no `max_tokens` (Azure OpenAI
   * reserves a model-dependent default: 16 measured on gpt-3.5, 648 on gpt-4o). Default: learned
   * from how far remaining-tokens drops for such a call; until an answer shows it, 648 on Azure
   * OpenAI, none on OpenAI (which charges the prompt) and Anthropic (which requires a cap).
   *
   * @example `{ name: 'gpt-35-turbo', tpm: 60_000, outputReservation: 16 }`
   */
  outputReservation?: number;
  /**
   * Claude: whether prompt-cache reads count toward `itpm`. Anthropic's current rule, for most
   * models, leaves them out (only uncached input and cache writes count), and so does the quota
   * by default; set `true` for a model that still counts them.
   *
   * @example `{ name: 'claude-3-haiku', itpm: 50_000, cacheReadsCountInput: true }`
   */
  cacheReadsCountInput?: boolean;
  /**
   * OpenAI and Anthropic: whether the token buckets (`tpm`, `itpm`) ramp after a cold start or two
   * idle minutes (a sixth of the bucket at once, all of it after 30 s) instead of taking a whole
   * bucket in one instant, which Anthropic's acceleration limits refuse. Default `true`.
   *
   * @example `{ name: 'gpt-4o-mini', tpm: 200_000, rampUp: false }`
   */
  rampUp?: boolean;
  /**
   * An Azure OpenAI provisioned (PTU) deployment: `tpm` is its capacity in input-equivalent tokens
   * a minute, and the upstream admits a call while its utilization is below 100 %, whatever the
   * call's size. A call is charged its uncached prompt and its output cap (or `outputReservation`)
   * times `outputWeight`, corrected to the actual output when it ends; cached input is free; the
   * charge drains continuously at `tpm` a minute. Its answers carry no `x-ratelimit-*` headers.
   * Where it has no room, a call goes to the next tier (`priority`) rather than into a 429.
   * `nestjs-switchboard plan` replays such a deployment by the same rules.
   *
   * @example `{ name: 'gpt-4.1', tpm: 60_000, provisioned: true, outputWeight: 4 }`
   */
  provisioned?: boolean;
  /**
   * `provisioned` only: how many input tokens one output token counts for in the deployment's
   * utilization, per model (gpt-4.1: 4). A finite number, at least 1. Default 1.
   *
   * @example `{ name: 'gpt-4.1', tpm: 60_000, provisioned: true, outputWeight: 4 }`
   */
  outputWeight?: number;
  /**
   * A quota several deployments draw on together: every model entry naming the same pool, on any
   * deployment, shares one count of every limit (Foundry's Claude quota is per subscription, so
   * each region's deployment of a model draws on one pool). A call admitted on one member charges
   * the pool, any member's answer corrects it, selection sees the room left in it, and replicas
   * share it through the state store. Members must state the same limits and belong to one
   * provider. Absent: the model counts its own quota on this deployment.
   *
   * @example `{ name: 'claude-sonnet-4-5', itpm: 2_000_000, otpm: 400_000, quotaPool: 'sub-a' }`
   */
  quotaPool?: string;
  /** How long (ms) the model is avoided after a 429 or a dropped connection. Default 10 000. */
  cooldown?: number;
  /** Overrides the deployment's `priority` for this model: its tier, 0 = most preferred. */
  priority?: number;
  /** Overrides the deployment's `weight` for this model within its tier. */
  weight?: number;
  /**
   * The most calls of this model in flight on this deployment at once (streams count until they
   * end); further calls go to another deployment with room, or wait in `queue`. Overrides the
   * deployment's `maxInFlight`. Absent: no cap.
   */
  maxInFlight?: number;
  /**
   * The model's context window in tokens: a call whose prompt estimate plus `max_tokens` exceeds
   * it is never sent here, but to the first of its `fallbacks` whose window fits and that has
   * room (none: a `SwitchboardError` naming the sizes, nothing sent). Absent: not checked before
   * sending; the upstream's own "too long" answer still moves the call to a fallback.
   */
  contextWindow?: number;
  /**
   * The most output tokens the model may write in one answer: what a budgeted tenant's call that
   * sets no `max_tokens` reserves against its budget, since such an answer may run to it. Absent:
   * the documented maximum of the model (`docs/tenants.md`), else 128 000.
   *
   * @example `{ name: 'gpt-4o-mini', maxOutput: 16_384 }`
   */
  maxOutput?: number;
  /**
   * ms from sending a streamed call to its first event on this model (overrides the
   * switchboard's `firstTokenTimeout`; reasoning models think long before their first event).
   */
  firstTokenTimeout?: number;
  /** ms between two events of a stream on this model (overrides the switchboard's `streamIdleTimeout`). */
  streamIdleTimeout?: number;
  /**
   * What this model costs on this deployment, when it differs from `options.pricing[name]`
   * (data-zone and regional prices do).
   */
  pricing?: Price;
}

/**
 * A model's price in USD per million tokens: prompt tokens (`input`), generated tokens
 * (`output`), prompt tokens read from a cache (`cachedInput`: OpenAI's cached tokens, Claude's
 * cache reads; default `input`) and tokens written to Claude's prompt cache (`cacheWrite`;
 * default `input`).
 *
 * @example
 * ```ts
 * const price: Price = { input: 2.5, output: 10, cachedInput: 1.25 }; // gpt-4o
 * const sonnet: Price = { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 };
 * ```
 */
export interface Price {
  input: number;
  output: number;
  cachedInput?: number;
  cacheWrite?: number;
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
  /**
   * What the deployment is, for calls that require it: a call with `tags: ['eu']` (or the header
   * `x-switchboard-tags: eu`) only goes to deployments carrying every tag it names, fallbacks and
   * best effort included (data residency). Words without blanks or commas.
   */
  tags?: string[];
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
  /** The cap of calls in flight for each of its models (a model's own `maxInFlight` wins). */
  maxInFlight?: number;
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
  /** The cap of calls in flight for each of its models (a model's own `maxInFlight` wins). */
  maxInFlight?: number;
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

/** Where log lines go; Nest's `Logger` fits. */
export type SwitchboardLogger = Pick<LoggerService, 'log' | 'warn' | 'error'> &
  Partial<Pick<LoggerService, 'debug' | 'verbose'>>;

/**
 * Why an attempt failed, as failure metrics and logs name it. `unauthorized` (401, 403, a token
 * provider that failed), `not_deployed` (Azure's 404 `DeploymentNotFound`) and `quota_exhausted`
 * (a 429 whose `retry-after` is hours: a daily or tier quota) are faults of one deployment.
 * `first_token_timeout`: a stream sent no event within `firstTokenTimeout` (nothing delivered, so
 * the call fails over; the deployment is not cooled).
 */
export type FailureReason =
  | 'rate_limit'
  | 'quota_exhausted'
  | 'unauthorized'
  | 'not_deployed'
  | 'connection'
  | 'timeout'
  | 'first_token_timeout'
  | 'aborted'
  | 'server_error'
  | 'malformed_response'
  | 'client_error'
  | 'switchboard'
  | 'other';

/**
 * What an answer reports it used: `input` (uncached prompt tokens), `output`, and for Claude the
 * prompt-cache reads (free against the quota) and writes (charged as input).
 *
 * @example
 * ```ts
 * const usage: TokenUsage = { input: 1180, output: 97, cacheWrite: 2048 };
 * ```
 */
export interface TokenUsage {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

/** Which SDK family a deployment speaks. */
export type Provider = 'openai' | 'anthropic';

/**
 * The switchboard's own addition to every call's params.
 *
 * @example
 * ```ts
 * await sb.chat.completions.create({ model: 'gpt-4o-mini', messages, session_id: 'user-42' });
 * ```
 */
export interface SessionParams {
  /** Calls with the same session id stay on one deployment while it is healthy (prompt caches). */
  session_id?: string;
  /**
   * `'interactive'` (default): someone waits for the answer. `'batch'`: a job that can wait; it
   * is served after interactive calls and leaves them headroom (`queue.batchHeadroom`).
   */
  lane?: 'interactive' | 'batch';
  /** Whose call it is: calls waiting for room are served fairly across tenants. */
  tenant?: string;
  /** `false`: this call goes to the model it names or fails, whatever `options.fallbacks` says. */
  fallbacks?: boolean;
  /**
   * Only deployments carrying every one of these tags may take the call (its fallbacks too): no
   * room among them is a 429 (or a wait in `queue`), never a call elsewhere.
   */
  tags?: string[];
  /**
   * `false`: the response cache (`options.cache`) neither answers this call nor keeps its answer.
   */
  cache?: boolean;
}

/**
 * A problem at one field of the options: where it is, and what is wrong there. Kept apart until
 * it is written out, so a config file can add the line of `path` (model names such as `gpt-4.1`
 * make a written path ambiguous).
 *
 * @example
 * ```ts
 * const problem: ConfigProblem = {
 *   path: ['fallbacks', 'gpt-4o', 0],
 *   message: "'o9' is served by no deployment: ...",
 * };
 * formatProblem(problem); // "fallbacks.gpt-4o[0] 'o9' is served by no deployment: ..."
 * ```
 */
export interface ConfigProblem {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

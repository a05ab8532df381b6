import type { BudgetOptions } from '../tenants/budget-options';
import type { PoolLimits } from '../quota/pool-level';
import type { Type } from '@nestjs/common';
import type { ReadinessOptions } from '../health/health-options';
import type { ApiAdapter } from '../providers/adapter';
import type { CacheOptions } from '../cache/cache-options';
import type { Selector } from '../selection/selector';
import type { StateStore } from '../state/state-store';
import type { QueueOptions } from '../scheduling/queue-options';
import type { TenantPolicy } from '../tenants/tenant-options';
import type { DeploymentConfig, FailoverOptions, Price, SwitchboardLogger } from '../types';

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
   * The longest cooldown (ms), whatever its source: an upstream's `retry-after`, a model's
   * `cooldown`, `markDown(ms)` by hand, a cooldown another replica shared. Default 86 400 000.
   */
  maxCooldown?: number;
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
   * `{ maxWait, maxQueued }`, wait in line for up to `maxWait` ms: interactive calls before batch
   * calls (`batchMaxWait`, `batchHeadroom`), tenants in turn within a lane, each tenant's calls in
   * order (see {@link QueueOptions}).
   */
  queue?: QueueOptions;
  /**
   * Output tokens charged at admission for a call that sets no `max_tokens` /
   * `max_completion_tokens`, on every deployment. Default 0: each deployment charges its model's
   * `outputReservation` instead (configured, learned from its rate-limit headers, or its kind of
   * upstream's default), as the upstream's reservation for uncapped calls differs per model.
   */
  defaultReservation?: number;
  /** How many session ids (and prompt prefixes, see {@link cacheAffinity}) are remembered (LRU). Default 1024. */
  maxSessions?: number;
  /**
   * Prompt-cache affinity (default true): a call without `session_id` whose `prompt_cache_key`,
   * Anthropic `cache_control` prefix, or long prefix (1 024 tokens or more of system prompt and
   * leading messages, kept as a hash) was seen recently goes to the deployment that served it,
   * where the upstream has that prefix cached, while that deployment has room; when it is full
   * the call goes elsewhere and the prefix's home moves with it. Shared across replicas as
   * sessions are.
   */
  cacheAffinity?: boolean;
  /**
   * The response cache: an exact answer (same tenant, operation, model and body) served again
   * for `ttl` ms without a deployment, quota or budget; per call `cache: false` turns it off.
   * See docs/cache.md.
   */
  cache?: CacheOptions;
  /**
   * How many stored response ids are remembered with the deployment that created them (LRU), so
   * `previous_response_id` and `responses.retrieve(id)` reach it. Default 10 000.
   */
  maxResponses?: number;
  /**
   * More API surfaces, mounted beside the built-in ones (`chat.completions`, `responses`,
   * `embeddings`, `messages`); see {@link ApiAdapter}.
   */
  adapters?: readonly ApiAdapter[];
  /** Where usage, cooldowns and sessions live: `memoryState()` (default) or a shared store. */
  state?: StateStore;
  /** Log sink; default Nest's `Logger` with context `Switchboard`. */
  logger?: SwitchboardLogger;
  /**
   * Serve every deployment from a simulated deployment in this process (with its configured
   * quota, on loopback): an application runs offline on its own configuration. Default: the
   * environment variable `SWITCHBOARD_SIMULATE=1`, else false. See docs/testing.md.
   */
  simulate?: boolean;
  /** Readiness: `{ ready: 'any' }` (default) while at least one model can be served, `'all'` every model. */
  health?: ReadinessOptions;
  /** Budgets while the shared store is down: `{ whenStoreDown: 'admit' | 'refuse' }` (default admit). */
  budgets?: BudgetOptions;
  /**
   * Limits of the levels of quota pool paths, per minute: a model whose `quotaPool` is
   * `org/project` draws on its pool and on each level named here (`org`, `org/project`); a call
   * goes only where every level has room and is charged at each. See docs/quota-counters.md (quota pools).
   */
  quotaPools?: Record<string, PoolLimits>;
  /** Clock in ms (tests inject a fake one). Default `Date.now`. */
  clock?: () => number;
  /** Random source in [0, 1) (tests inject a seeded one). Default `Math.random`. */
  random?: () => number;
  /**
   * Models to use when no deployment of the requested one can take a call (all cooling, none with
   * room, or every attempt of the call failed), in order of preference. A fallback's own
   * fallbacks follow it. Opt out per call with `fallbacks: false` beside `session_id`.
   */
  fallbacks?: Record<string, string[]>;
  /**
   * Limits per tenant (the `tenant` a call names), or under `'*'` for every tenant not named:
   * tokens and requests per minute, tokens per day and a budget, held across every deployment and
   * model and, with a shared state store, every replica. Over a limit a call fails at once with
   * the SDK's `RateLimitError`, or waits in `queue`. A tenant id `a/b` is a part of tenant `a`:
   * `a`'s policy holds it, counted together with `a` and its other parts. See docs/tenants.md.
   */
  tenants?: Record<string, TenantPolicy>;
  /** USD per million tokens per model (overridable per deployment with `ModelConfig.pricing`). */
  pricing?: Record<string, Price>;
  /**
   * ms from sending a streamed call to its first event (a model's own `firstTokenTimeout` wins).
   * A stream that has sent nothing by then is aborted (the upstream sees the connection close),
   * its tokens given back, its request still counted, the deployment not cooled, and the call
   * fails over as if nothing had been sent: its caller gets the stream of the attempt that
   * delivered. Absent: no such deadline (the call's `timeout` ends at the response's headers).
   */
  firstTokenTimeout?: number;
  /**
   * ms between two events of a stream once output has begun (a model's own `streamIdleTimeout`
   * wins). When it passes, the caller's iteration throws the SDK's `APIConnectionTimeoutError`
   * and the call's slot in flight and its accounting are released; nothing is sent again, as
   * output was already delivered. Absent: a stream may pause for ever.
   */
  streamIdleTimeout?: number;
  /**
   * Models tried, in order, when Azure OpenAI's content filter refuses a call to the model named
   * by the key (a 400 `content_filter`, or an answer ending with `finish_reason:
   * 'content_filter'`): filter policies are set per deployment, so another model's may let it
   * through. The filtering deployment is not marked down. Without an entry the caller gets the
   * SDK's `BadRequestError` as Azure sent it (`error.innererror.content_filter_result`).
   */
  contentFilterFallbacks?: Record<string, string[]>;
  /**
   * A JSONL file to append one line per finished call to (arrival, model, deployment, tokens as
   * the upstream reported them, `max_tokens`, lane, tenant, status, latency; never any content),
   * for `npx nestjs-switchboard plan`. Written off the call path, in one append per second; the
   * last lines on `close()`. See docs/capacity-planning.md.
   *
   * @example
   * ```ts
   * createSwitchboard({ deployments, recordTraffic: '/var/log/switchboard/traffic.jsonl' });
   * ```
   */
  recordTraffic?: string;
}

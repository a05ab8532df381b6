import { Inject, Injectable, Optional } from '@nestjs/common';
import type { Admission } from '../quota/admission';
import type { StateStoreHealth } from '../state/state-store';
import { Switchboard } from '../switchboard';
import {
  plainHealthResults,
  SWITCHBOARD_HEALTH_RESULTS,
  type HealthResult,
  type HealthResults,
} from './health-results';

/** The smallest call there is (one request, one token): does the deployment take any call now? */
const SMALLEST_CALL: Admission = Object.freeze({ input: 1, output: 0 });

/**
 * Health of one model across the deployments that serve it.
 *
 * @example
 * ```ts
 * const health: ModelHealth = { healthy: 1, total: 2, cooling: { east: 8_500 } };
 * ```
 */
export interface ModelHealth {
  /** Deployments that would take a call for the model now. */
  healthy: number;
  /** Deployments configured for the model. */
  total: number;
  /** Deployments in a cooldown (after a 429, a fault, or by hand), with the ms left. */
  cooling?: Record<string, number>;
  /**
   * Deployments at their quota: used up by the quota view, or cooling after a 429. Room comes back
   * by itself, so they do not make the model `down`.
   */
  saturated?: string[];
  /** When no deployment is healthy but some are saturated: ms until the first expects room. */
  roomExpectedIn?: number;
  /** With priority tiers: each tier's healthy and configured deployments, most preferred first. */
  tiers?: TierHealth[];
  /** Configured fallback models, in the order calls try them. */
  fallbacks?: string[];
  /** The fallback model taking this model's calls now: none of its own deployments is healthy. */
  fallbackInUse?: string;
}

/**
 * Health of one priority tier of a model.
 *
 * @example
 * ```ts
 * const ptu: TierHealth = { priority: 0, healthy: 0, total: 2, deployments: ['ptu-1', 'ptu-2'] };
 * ```
 */
export interface TierHealth {
  priority: number;
  healthy: number;
  total: number;
  deployments: string[];
}

/**
 * What {@link SwitchboardHealthIndicator.isHealthy} reports besides `status`.
 *
 * @example
 * ```ts
 * const details: SwitchboardHealthDetails = {
 *   models: { 'gpt-4o-mini': { healthy: 2, total: 2 } },
 *   state: { status: 'up', store: 'memory' },
 * };
 * ```
 */
export interface SwitchboardHealthDetails extends Record<string, unknown> {
  models: Record<string, ModelHealth>;
  /** The state store's own report; `degraded` does not make the switchboard `down`. */
  state: StateStoreHealth;
  /**
   * Set when a model cannot be served (every deployment out for a fault, no fallback): which
   * ones. With `ready: 'any'` the check stays `up` while another model can be served.
   */
  message?: string;
  /**
   * Why deployments are avoided now, per model and deployment, where the mark-down said:
   * `unauthorized (401)`, `not deployed`, `quota exhausted until <ISO time>`, `rate_limit`, ...
   * Absent when no cooling deployment has a reason.
   */
  reasons?: Record<string, Record<string, string>>;
}

/**
 * Options of {@link SwitchboardHealthIndicator.isHealthy}.
 *
 * @example
 * ```ts
 * const options: SwitchboardHealthOptions = { models: ['gpt-4o-mini'] };
 * ```
 */
export interface SwitchboardHealthOptions {
  /** Check only these models (default: every configured model). */
  models?: readonly string[];
  /**
   * `'any'`: up while at least one of the models can be served; `'all'`: while every one can.
   * Default: the switchboard's `health.ready` option, itself `'any'` by default.
   */
  ready?: 'any' | 'all';
}

/**
 * `@nestjs/terminus` health indicators for the two Kubernetes probes:
 *
 * - {@link isHealthy}, the **readiness** check: a model cannot be served when every one of its
 *   deployments is out for a fault (connection errors, a 5xx streak, 401/403, marked down by
 *   hand) and no fallback model can take its calls; the check is `down` when no model can be
 *   served (`health: { ready: 'any' }`, the default) or when any cannot (`ready: 'all'`), and
 *   the details name them. A model whose deployments are merely at their quota (used up, or
 *   cooling after 429s) can be served: the details say `saturated` and `roomExpectedIn`. The
 *   busiest minute of the day takes no replica out of the Service.
 * - {@link isLive}, the **liveness** check: never looks at an upstream, so an outage of every
 *   deployment never restarts a pod.
 *
 * Neither throws: terminus reads the status. Registered and exported by `SwitchboardModule`.
 * Results come from terminus' `HealthIndicatorService`; without `@nestjs/terminus` installed,
 * from an equivalent builder.
 *
 * @example
 * ```ts
 * @Controller('health')
 * export class HealthController {
 *   constructor(
 *     private readonly health: HealthCheckService,
 *     private readonly switchboard: SwitchboardHealthIndicator,
 *   ) {}
 *
 *   @Get('ready')
 *   @HealthCheck()
 *   ready() {
 *     return this.health.check([() => this.switchboard.isHealthy('llm')]);
 *   }
 *
 *   @Get('live')
 *   @HealthCheck()
 *   live() {
 *     return this.health.check([() => this.switchboard.isLive()]);
 *   }
 * }
 * ```
 */
@Injectable()
export class SwitchboardHealthIndicator {
  constructor(
    private readonly switchboard: Switchboard,
    @Optional()
    @Inject(SWITCHBOARD_HEALTH_RESULTS)
    private readonly healthIndicatorService: HealthResults = plainHealthResults,
  ) {}

  /**
   * The switchboard's health under `key`.
   *
   * @example
   * ```ts
   * await indicator.isHealthy('llm', { models: ['gpt-4o-mini'] });
   * // { llm: { status: 'up', models: { 'gpt-4o-mini': { healthy: 2, total: 2 } }, state: {...} } }
   * ```
   */
  isHealthy<const Key extends string = 'switchboard'>(
    key: Key = 'switchboard' as Key,
    options: SwitchboardHealthOptions = {},
  ): HealthResult<Key, 'up' | 'down', SwitchboardHealthDetails> {
    const registry = this.switchboard.registry;
    const names = options.models ?? [...registry.pools.keys()];
    const models: Record<string, ModelHealth> = {};
    const reasons: Record<string, Record<string, string>> = {};
    const down: string[] = [];
    for (const model of names) {
      const pool = registry.pools.get(model) ?? [];
      const health: ModelHealth = { healthy: 0, total: pool.length };
      let roomIn = Infinity;
      for (const deployment of pool) {
        const state = deployment.models.get(model)!;
        if (state.isHealthy()) {
          health.healthy++;
          continue;
        }
        if (state.isCooling()) {
          (health.cooling ??= {})[deployment.name] = Math.ceil(state.cooldownRemaining);
          const why = state.downReason;
          if (why !== undefined) (reasons[model] ??= {})[deployment.name] = why;
        }
        // `quota`: full by the quota view, or cooling after a 429; `down`: any other mark-down.
        if (state.blockedBy(SMALLEST_CALL) !== 'down') {
          (health.saturated ??= []).push(deployment.name);
          roomIn = Math.min(roomIn, state.roomAt(SMALLEST_CALL));
        }
      }
      if (health.healthy === 0 && Number.isFinite(roomIn)) {
        health.roomExpectedIn = Math.ceil(roomIn);
      }
      const tiers = registry.tiers.get(model);
      if (tiers !== undefined) {
        health.tiers = tiers.map((tier) => ({
          priority: tier[0]!.models.get(model)!.priority,
          healthy: tier.filter((d) => d.models.get(model)!.isHealthy()).length,
          total: tier.length,
          deployments: tier.map((d) => d.name),
        }));
      }
      const fallbacks = this.switchboard.fallbacks.get(model);
      if (fallbacks !== undefined) {
        health.fallbacks = [...fallbacks];
        if (health.healthy === 0) {
          // Calls are still answered, by the first fallback with a healthy deployment.
          health.fallbackInUse = fallbacks.find((f) =>
            (registry.pools.get(f) ?? []).some((d) => d.models.get(f)!.isHealthy()),
          );
        }
      }
      models[model] = health;
      if (health.healthy === 0 && health.fallbackInUse === undefined && !health.saturated) {
        down.push(model);
      }
    }
    const details: SwitchboardHealthDetails = { models, state: this.stateHealth() };
    if (Object.keys(reasons).length > 0) details.reasons = reasons;
    const check = this.healthIndicatorService.check(key);
    if (down.length === 0) return check.up(details);
    details.message = down
      .map((m) =>
        registry.pools.has(m) ? `no healthy deployment for ${m}` : `${m} is not configured`,
      )
      .join('; ');
    // Replicas share their upstreams: one model's outage would take every pod out at once, and
    // the other models' traffic with it. By default a pod is ready while any model is served.
    const ready = options.ready ?? this.switchboard.ready;
    const served = names.length > down.length;
    return ready === 'any' && served ? check.up(details) : check.down(details);
  }

  /**
   * The liveness check: `up` while the process answers. It never depends on an upstream or on
   * the state store, so an outage of every deployment never restarts the pod; readiness
   * ({@link isHealthy}) takes it out of the Service instead.
   *
   * @example
   * ```ts
   * indicator.isLive(); // { switchboard: { status: 'up' } }
   * ```
   */
  isLive<const Key extends string = 'switchboard'>(
    key: Key = 'switchboard' as Key,
  ): HealthResult<Key, 'up', Record<string, never>> {
    return this.healthIndicatorService.check(key).up({});
  }

  private stateHealth(): StateStoreHealth {
    try {
      return this.switchboard.state.health();
    } catch (error) {
      // A health endpoint must answer; a store that cannot report is degraded, not fatal.
      return {
        status: 'degraded',
        error: error instanceof Error ? error.message : String(error),
      };
    }
  }
}

import { Inject, Injectable, Optional } from '@nestjs/common';
import type { StateStoreHealth } from '../state/state-store';
import { Switchboard } from '../switchboard';
import {
  plainHealthResults,
  SWITCHBOARD_HEALTH_RESULTS,
  type HealthResult,
  type HealthResults,
} from './health-results';

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
  /** Deployments in a cooldown (after a 429 or a dropped connection), with the ms left. */
  cooling?: Record<string, number>;
  /**
   * Why deployments in {@link cooling} are avoided, where the mark-down said: `unauthorized (401)`,
   * `not deployed`, `quota exhausted until <ISO time>`, ...
   */
  reasons?: Record<string, string>;
  /** Deployments whose TPM or RPM quota is used up until the next usage reset. */
  saturated?: string[];
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
  /** Set when `down`: which models have no healthy deployment. */
  message?: string;
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
}

/**
 * A `@nestjs/terminus` health indicator: `up` while every model (or every one of `models`) has a
 * healthy deployment or a fallback model with one, `down` otherwise, with per-model counts, the deployments cooling down and
 * the state store's health in the details. It never throws: terminus reads the status.
 *
 * Registered and exported by `SwitchboardModule`. Results come from terminus'
 * `HealthIndicatorService`; without `@nestjs/terminus` installed, from an equivalent builder.
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
 *   @Get()
 *   @HealthCheck()
 *   check() {
 *     return this.health.check([() => this.switchboard.isHealthy('llm')]);
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
    const down: string[] = [];
    for (const model of names) {
      const pool = registry.pools.get(model) ?? [];
      const health: ModelHealth = { healthy: 0, total: pool.length };
      for (const deployment of pool) {
        const state = deployment.models.get(model)!;
        if (state.isHealthy()) {
          health.healthy++;
        } else if (state.isCooling()) {
          (health.cooling ??= {})[deployment.name] = Math.ceil(state.cooldownRemaining);
          const why = state.downReason;
          if (why !== undefined) (health.reasons ??= {})[deployment.name] = why;
        } else {
          (health.saturated ??= []).push(deployment.name);
        }
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
      if (health.healthy === 0 && health.fallbackInUse === undefined) down.push(model);
    }
    const details: SwitchboardHealthDetails = { models, state: this.stateHealth() };
    const check = this.healthIndicatorService.check(key);
    if (down.length === 0) return check.up(details);
    details.message = down
      .map((m) => {
        if (!registry.pools.has(m)) return `${m} is not configured`;
        const reasons = Object.entries(models[m]?.reasons ?? {});
        const why = reasons.map(([d, r]) => `${d}: ${r}`).join(', ');
        return `no healthy deployment for ${m}${why ? ` (${why})` : ''}`;
      })
      .join('; ');
    return check.down(details);
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

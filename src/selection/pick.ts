import type { Admission } from '../quota/admission';
import { keptRoom } from '../quota/hot-row';
import type { SwitchboardLogger } from '../types';
import type { Deployment } from '../registry/deployment';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { ModelState } from '../registry/model-state';
import { carries, type TagSet } from '../placement/tags';
import type { Gate, Selector } from './selector';

/**
 * Whether a model on a deployment can take one more call now: the one test that tiers, sessions,
 * fallbacks and failover share. With the call's admission charge, whether that charge fits the
 * model's limits (and it is not cooling); without (calls that use no quota), whether the model is
 * healthy. Either way, a slot under its `maxInFlight` cap must be free. `now` is the clock's
 * reading (epoch ms) when the caller has one for every deployment it asks about.
 *
 * `keptRoom` (`quota/hot-row.ts`) is the same test read from a model's hot row alone, for gates
 * that answer a selector's draws there; it says when the row cannot tell.
 *
 * @example
 * ```ts
 * const open = pool.filter((d) => hasRoom(d.models.get('gpt-4o')!, { input: 900, output: 256 }));
 * ```
 */
export function hasRoom(
  state: ModelState,
  admission: Admission | undefined,
  now?: number,
): boolean {
  if (state.capped && !state.inFlight.hasRoom()) return false;
  if (admission === undefined) return state.isHealthy();
  return now === undefined ? state.hasRoom(admission) : state.hasRoomAt(admission, now);
}

/**
 * A call's gate: {@link hasRoom} for its `admission` charge, and not one of the deployments in
 * `exclude` (those it already tried). A call's dispatch is its own gate.
 *
 * @example
 * ```ts
 * const gate: CallGate = new RoomGate({ input: 900, output: 256 }, tried);
 * ```
 */
export interface CallGate extends Gate {
  readonly admission: Admission | undefined;
  readonly exclude: ReadonlySet<Deployment> | undefined;
}

/**
 * The gate of a call: {@link hasRoom} for its admission charge, and not one of the deployments it
 * already tried (`exclude`).
 *
 * @example
 * ```ts
 * const gate = new RoomGate({ input: 900, output: 256 });
 * selector.pick('gpt-4o', pool, gate);
 * ```
 */
export class RoomGate implements CallGate {
  constructor(
    readonly admission: Admission | undefined = undefined,
    readonly exclude: ReadonlySet<Deployment> | undefined = undefined,
    /** The models' clock: with it, the gate answers from their hot rows too. */
    private readonly clock?: () => number,
  ) {}

  get now(): number | undefined {
    return this.clock?.();
  }

  admits(state: ModelState, deployment: Deployment): boolean {
    return hasRoom(state, this.admission) && !(this.exclude?.has(deployment) ?? false);
  }

  admitsRow(table: Float64Array, row: number, now: number): number {
    // Which deployments were tried is not in the row.
    if (this.exclude !== undefined && this.exclude.size > 0) return -1;
    return keptRoom(table, row, this.admission, now);
  }
}
/** A model that is only over its quota by our count may still answer; one cooling has said it will not. */
const NOT_COOLING: Gate = { admits: (state) => !state.isCooling() };
const ANY: Gate = { admits: () => true };

/** How often, at most, the best-effort warning is logged for one model. */
const BEST_EFFORT_WARN_INTERVAL = 10_000;

/**
 * Picks the deployment of a call among a registry's deployments: the session's own while it may
 * take the call, else the selector's pick in the most preferred tier that has one. The registry
 * holds the pools, tiers and sessions; the selector weighs a pool; the picker applies the rules
 * around them (gates, tiers, sessions, best effort).
 *
 * @example
 * ```ts
 * const picker = new DeploymentPicker(registry, new TwoRandomChoices());
 * picker.select('gpt-4o-mini', 'session-1').name; // 'east'
 * ```
 */
export class DeploymentPicker {
  /** Admits the healthy deployments, at the registry's clock. */
  readonly healthy: RoomGate;
  private readonly lastBestEffortWarning = new Map<string, number>();

  constructor(
    readonly registry: DeploymentRegistry,
    readonly selector: Selector,
    private readonly clock: () => number = Date.now,
    private readonly logger?: SwitchboardLogger,
  ) {
    this.healthy = new RoomGate(undefined, undefined, clock);
  }

  /**
   * The deployment for a call when room does not decide: the session's own while healthy, else
   * one the selector picks among healthy deployments not in `exclude`, in the most preferred tier
   * that has one (best effort among all when none is healthy); a session is then remembered on
   * the new one.
   *
   * `exclude` holds the deployments a call already tried. While any deployment is left untried,
   * the choice stays among those (healthy first, then best effort): one that is cooling down or
   * over its quota may still answer, while the one that just failed this call has already said it
   * will not. Only once every deployment was tried does the choice go back to them all.
   *
   * @example
   * ```ts
   * const d = picker.select('gpt-4o', undefined, new Set([failed]));
   * ```
   */
  select(
    model: string,
    sessionId?: string,
    exclude?: ReadonlySet<Deployment>,
    tags?: TagSet,
  ): Deployment {
    const { registry, selector, healthy } = this;
    const pool = registry.poolFor(model, tags);
    const retrying = exclude !== undefined && exclude.size > 0;
    const fresh = retrying ? untried(pool, exclude) : pool;
    const untriedGate = retrying ? new RoomGate(undefined, exclude) : healthy;
    const held = this.heldBySession(model, sessionId, untriedGate, tags);
    if (held !== undefined) return held;
    const tiers = registry.tiersFor(model, tags);
    let chosen =
      tiers === undefined
        ? selector.pick(model, fresh, healthy)
        : this.inTiers(model, tiers, fresh === pool ? healthy : untriedGate);
    if (chosen === undefined) {
      chosen = selector.pick(model, fresh, NOT_COOLING) ?? selector.pick(model, fresh, ANY)!;
      this.bestEffort(model, chosen);
    }
    if (sessionId !== undefined) registry.sessions.set(sessionId, chosen.name);
    return chosen;
  }

  /**
   * A deployment of `model` that `gate` admits: the session's own while it does, else the
   * selector's pick in the most preferred tier that has one; `undefined` when none does (no best
   * effort). A session is remembered on what is picked. `pool` is `model`'s (carrying `tags`),
   * when the caller has it already.
   *
   * @example
   * ```ts
   * const d = picker.withRoom('gpt-4o', 'user-42', new RoomGate(admission, tried));
   * ```
   */
  withRoom(
    model: string,
    sessionId: string | undefined,
    gate: Gate,
    pool?: readonly Deployment[],
    tags?: TagSet,
  ): Deployment | undefined {
    const held = this.heldBySession(model, sessionId, gate, tags);
    if (held !== undefined) return held;
    const { registry } = this;
    const tiers = registry.tiersFor(model, tags);
    const chosen =
      tiers === undefined
        ? this.selector.pick(model, pool ?? registry.poolFor(model, tags), gate)
        : this.inTiers(model, tiers, gate);
    if (chosen !== undefined && sessionId !== undefined) {
      registry.sessions.set(sessionId, chosen.name);
    }
    return chosen;
  }

  /**
   * The session's deployment while the gate admits it, even in a lower tier than one that
   * recovered: moving would lose the upstream's prompt cache.
   */
  private heldBySession(
    model: string,
    sessionId: string | undefined,
    gate: Gate,
    tags: TagSet | undefined,
  ): Deployment | undefined {
    if (sessionId === undefined) return undefined;
    const name = this.registry.sessions.get(sessionId);
    if (name === undefined) return undefined;
    const d = this.registry.deployments.get(name);
    const state = d?.models.get(model);
    return state !== undefined && carries(d!, tags) && gate.admits(state, d!) ? d : undefined;
  }

  /** The most preferred tier the gate admits a deployment of takes the call. */
  private inTiers(
    model: string,
    tiers: readonly (readonly Deployment[])[],
    gate: Gate,
  ): Deployment | undefined {
    for (const tier of tiers) {
      const chosen = this.selector.pick(model, tier, gate);
      if (chosen !== undefined) return chosen;
    }
    return undefined;
  }

  /** No healthy deployment was left for `model`: said at most once per interval. */
  private bestEffort(model: string, chosen: Deployment): void {
    if (this.logger === undefined) return;
    const now = this.clock();
    if (now - (this.lastBestEffortWarning.get(model) ?? -Infinity) < BEST_EFFORT_WARN_INTERVAL) {
      return;
    }
    this.lastBestEffortWarning.set(model, now);
    this.logger.warn(
      `No healthy deployment for ${model}: trying ${chosen.name} on a best-effort basis`,
    );
  }
}

/** The deployments of `pool` not in `tried`; all of `pool` when every one was tried. */
function untried(
  pool: readonly Deployment[],
  tried: ReadonlySet<Deployment>,
): readonly Deployment[] {
  const left = pool.filter((d) => !tried.has(d));
  return left.length > 0 ? left : pool;
}

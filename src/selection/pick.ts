import type { Admission } from '../quota/admission';
import { keptRoom } from '../quota/hot-row';
import type { Deployment } from '../registry/deployment';
import type { ModelState } from '../registry/model-state';
import { carries, type TagSet } from '../placement/tags';
import type { SessionAffinity } from './session-affinity';
import type { Gate, Selector } from './selector';

/**
 * What picking a deployment reads: the pools and tiers of each model, the sessions and the
 * selector (the deployment registry is one).
 *
 * @example
 * ```ts
 * pickDeployment(registry, 'gpt-4o', 'user-42');
 * ```
 */
export interface PickTable {
  readonly deployments: ReadonlyMap<string, Deployment>;
  readonly sessions: SessionAffinity;
  readonly selector: Selector;
  /** Admits the healthy deployments, at the table's clock. */
  readonly healthy: Gate;
  /**
   * The deployments serving `model` (those carrying every one of `tags`, when given: possibly
   * none), or an error that says why no deployment serves it.
   */
  poolFor(model: unknown, tags?: TagSet): readonly Deployment[];
  /** The tiers of {@link poolFor}'s pool, most preferred first; `undefined` for one priority. */
  tiersFor(model: string, tags?: TagSet): readonly (readonly Deployment[])[] | undefined;
}

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

/**
 * A deployment of `model` that `gate` admits: the session's own while it does, else the
 * selector's pick in the most preferred tier that has one; `undefined` when none does (no best
 * effort). A session is remembered on what is picked. `pool` is `model`'s (carrying `tags`), when
 * the caller has it already.
 *
 * @example
 * ```ts
 * const d = pickWithRoom(registry, 'gpt-4o', 'user-42', new RoomGate(admission, tried));
 * ```
 */
export function pickWithRoom(
  table: PickTable,
  model: string,
  sessionId: string | undefined,
  gate: Gate,
  pool?: readonly Deployment[],
  tags?: TagSet,
): Deployment | undefined {
  const held = heldBySession(table, model, sessionId, gate, tags);
  if (held !== undefined) return held;
  const tiers = table.tiersFor(model, tags);
  const chosen =
    tiers === undefined
      ? table.selector.pick(model, pool ?? table.poolFor(model, tags), gate)
      : inTiers(table, model, tiers, gate);
  if (chosen !== undefined && sessionId !== undefined) table.sessions.set(sessionId, chosen.name);
  return chosen;
}

/**
 * The deployment for a call when room does not decide: the session's own while healthy, else a
 * healthy one not in `exclude` (most preferred tier first), else best effort among those not in
 * `exclude`: one that is not cooling, else any. While any deployment is left untried the choice
 * stays among those; once every one was tried it goes back to them all. A session is remembered
 * on the result; `onBestEffort` hears when no healthy deployment was left.
 *
 * @example
 * ```ts
 * const d = pickDeployment(registry, 'gpt-4o', undefined, new Set([failed]));
 * ```
 */
export function pickDeployment(
  table: PickTable,
  model: string,
  sessionId?: string,
  exclude?: ReadonlySet<Deployment>,
  onBestEffort?: (model: string, chosen: Deployment) => void,
  tags?: TagSet,
): Deployment {
  const pool = table.poolFor(model, tags);
  const retrying = exclude !== undefined && exclude.size > 0;
  const fresh = retrying ? untried(pool, exclude) : pool;
  const healthy = table.healthy;
  const untriedGate = retrying ? new RoomGate(undefined, exclude) : healthy;
  const held = heldBySession(table, model, sessionId, untriedGate, tags);
  if (held !== undefined) return held;
  const tiers = table.tiersFor(model, tags);
  const { selector } = table;
  let chosen =
    tiers === undefined
      ? selector.pick(model, fresh, healthy)
      : inTiers(table, model, tiers, fresh === pool ? healthy : untriedGate);
  if (chosen === undefined) {
    chosen = selector.pick(model, fresh, NOT_COOLING) ?? selector.pick(model, fresh, ANY)!;
    onBestEffort?.(model, chosen);
  }
  if (sessionId !== undefined) table.sessions.set(sessionId, chosen.name);
  return chosen;
}

/**
 * The session's deployment while the gate admits it, even in a lower tier than one that
 * recovered: moving would lose the upstream's prompt cache.
 */
function heldBySession(
  table: PickTable,
  model: string,
  sessionId: string | undefined,
  gate: Gate,
  tags: TagSet | undefined,
): Deployment | undefined {
  if (sessionId === undefined) return undefined;
  const name = table.sessions.get(sessionId);
  if (name === undefined) return undefined;
  const d = table.deployments.get(name);
  const state = d?.models.get(model);
  return state !== undefined && carries(d!, tags) && gate.admits(state, d!) ? d : undefined;
}

/** The most preferred tier the gate admits a deployment of takes the call. */
function inTiers(
  table: PickTable,
  model: string,
  tiers: readonly (readonly Deployment[])[],
  gate: Gate,
): Deployment | undefined {
  for (const tier of tiers) {
    const chosen = table.selector.pick(model, tier, gate);
    if (chosen !== undefined) return chosen;
  }
  return undefined;
}

/** The deployments of `pool` not in `tried`; all of `pool` when every one was tried. */
function untried(
  pool: readonly Deployment[],
  tried: ReadonlySet<Deployment>,
): readonly Deployment[] {
  const left = pool.filter((d) => !tried.has(d));
  return left.length > 0 ? left : pool;
}

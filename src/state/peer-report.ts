import { DEFAULT_MAX_COOLDOWN } from '../runtime/upstream-numbers';
import type { ModelState } from '../registry/model-state';
import type { PeerUsage } from '../quota/peer-usage';
import type { SharedReading } from '../quota/reading';

export type { PeerUsage } from '../quota/peer-usage';

/**
 * What the other instances said about one model: their usage, the newest reading one of them
 * had from it (its limits left out: a limit is never learned from a peer) and the cooldown the
 * store holds for it (epoch ms, not capped yet).
 *
 * @example
 * ```ts
 * const peer: PeerModelReport = { usage: { tokens: 120, requests: 1, recentRequests: 1, spans: [] } };
 * ```
 */
export interface PeerModelReport {
  usage?: PeerUsage;
  /** The newest reading one of them had from it (its limits left out). */
  reading?: SharedReading;
  cooldownUntil?: number;
}

/**
 * What one sync of a shared state store brought back, already checked: it writes into no model;
 * {@link peerFold} applies it.
 *
 * @example
 * ```ts
 * const report = await store.sync!();
 * report.models.get('east')?.get('gpt-4o')?.usage?.tokens; // the others' tokens there
 * ```
 */
export interface PeerReport {
  /** When it was read (epoch ms, the switchboard's clock). */
  at: number;
  /**
   * Usage and readings were read: a model the report leaves out had none from the others. False
   * for a sync that only published cooldowns.
   */
  usage: boolean;
  /** The cooldowns were read: a model without `cooldownUntil` has none in the store. */
  cooldowns: boolean;
  /** By deployment name, then model name. */
  models: ReadonlyMap<string, ReadonlyMap<string, PeerModelReport>>;
}

/**
 * A report that says nothing: what a store without peers answers.
 *
 * @example
 * ```ts
 * const report = emptyPeerReport(Date.now()); // usage: false, cooldowns: false
 * ```
 */
export function emptyPeerReport(at: number): PeerReport {
  return { at, usage: false, cooldowns: false, models: new Map() };
}

/** What {@link peerFold} folds into: the models of every deployment. */
export interface PeerFoldTarget {
  readonly deployments: ReadonlyMap<string, { readonly models: ReadonlyMap<string, ModelState> }>;
}

/**
 * Options of {@link peerFold}.
 *
 * @example
 * ```ts
 * const options: PeerFoldOptions = { maxCooldown: 3_600_000 };
 * ```
 */
export interface PeerFoldOptions {
  /** The longest cooldown taken from the store (ms), counted from when it was first seen. Default one day. */
  maxCooldown?: number;
}

/**
 * Applies each {@link PeerReport} to the models of `target`: the others' usage becomes each
 * model's shared view, a newer reading of theirs is anchored on (`replay`), and a cooldown the
 * store holds is taken (capped by `maxCooldown`, counted from when this value was first seen)
 * until the store no longer holds it; one this instance decided itself stays.
 *
 * @example
 * ```ts
 * const fold = peerFold(registry, { maxCooldown: DEFAULT_MAX_COOLDOWN });
 * fold(await store.sync!());
 * ```
 */
export function peerFold(
  target: PeerFoldTarget,
  options: PeerFoldOptions = {},
): (report: PeerReport) => void {
  const maxCooldown = options.maxCooldown ?? DEFAULT_MAX_COOLDOWN;
  /** Per model, the cooldown last taken from the store: its value there, and what was applied. */
  const taken = new Map<ModelState, { raw: number; applied: number }>();

  const cooldown = (state: ModelState, raw: number | undefined, now: number): void => {
    const held = taken.get(state);
    if (raw === undefined) {
      if (held === undefined) return;
      taken.delete(state);
      // Gone from the store (expired, or marked up elsewhere): only a cooldown taken from it ends.
      if (state.cooldownUntil === held.applied) state.applyCooldown(0);
      return;
    }
    // The same value seen again keeps its first cap: a value held forever cannot renew it.
    const applied = held?.raw === raw ? held.applied : Math.min(raw, now + maxCooldown);
    const current = state.cooldownUntil;
    // A longer one is taken; one taken from the store follows the store, shorter or not.
    const fromStore = held !== undefined && current === held.applied;
    if (applied > current || (fromStore && applied !== current)) state.applyCooldown(applied);
    taken.set(state, { raw, applied });
  };

  return (report) => {
    for (const [deployment, d] of target.deployments) {
      const peers = report.models.get(deployment);
      for (const [name, state] of d.models) {
        const peer = peers?.get(name);
        if (report.usage) {
          share(state, peer?.usage);
          if (peer?.reading !== undefined) state.quota.replay(peer.reading);
        }
        if (report.cooldowns) cooldown(state, peer?.cooldownUntil, report.at);
      }
    }
  };
}

/**
 * The others' usage becomes the model's shared view, by when it was sent: the model's accounting
 * leaves out what the upstream's own count already holds, or has forgotten.
 */
const NO_SPANS: readonly number[] = Object.freeze([]);

function share(state: ModelState, usage: PeerUsage | undefined): void {
  const shared = (state.quota.shared ??= { tokens: 0, requests: 0, recentRequests: 0 });
  shared.tokens = usage?.tokens ?? 0;
  shared.requests = usage?.requests ?? 0;
  shared.recentRequests = usage?.recentRequests ?? 0;
  // A fixed window has no send times that matter: its owner resets it.
  if (state.quota.bucketMs > 0) shared.spans = usage?.spans ?? NO_SPANS;
  else delete shared.spans;
}

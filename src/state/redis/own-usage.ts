import type { DeploymentRegistry } from '../../registry/deployment-registry';
import type { ModelState } from '../../registry/model-state';
import type { PeerModelBounds } from './peer-checks';
import { encodeReading, publishBuckets, type PublishedUsage } from './redis-protocol';

/**
 * One model as a Redis store shares it.
 *
 * @example
 * ```ts
 * const entry: Entry = { state, field: 'east:gpt-4o', bounds: { deployment: 'east', model: 'gpt-4o', tokens: 0, requests: 0, input: 0, output: 0 } };
 * ```
 */
export interface Entry {
  state: ModelState;
  /**
   * `<deployment>:<model>`, URI-encoded: the cooldowns hash's field and the usage's key; a quota
   * pool's usage is keyed by {@link poolField}.
   */
  field: string;
  /** The bounds of what the others may report for it. */
  bounds: PeerModelBounds;
}

/**
 * The usage key of a quota pool: `%pool:<name>`, URI-encoded, which no `<deployment>:<model>`
 * field can be (their `%` is always an escape).
 *
 * @example
 * ```ts
 * poolField('sub a'); // '%pool:sub%20a'
 * ```
 */
function poolField(pool: string): string {
  return `%pool:${encodeURIComponent(pool)}`;
}

/** Most buckets per window in which usage is published: a view at most 1/60 of it too old. */
const BUCKETS_PER_WINDOW = 60;

/** How many of a window's buckets go into one published bucket. */
function mergeFactor(bucketMs: number, windowMs: number): number {
  return Math.max(1, Math.ceil(Math.round(windowMs / bucketMs) / BUCKETS_PER_WINDOW));
}

/**
 * This instance's own usage per bucket, as published: the models' own windows, whose buckets
 * are epoch-aligned, merged into at most {@link BUCKETS_PER_WINDOW} per window to keep each
 * sync small. A fixed window is one bucket that never ages (its owner resets it). Reads the
 * models, changes none.
 *
 * @example
 * ```ts
 * const usage = ownUsage(entries, Date.now()); // { at, bucketMs: 1000, models: { 'east:gpt-4o': [...] }, readings: {} }
 * ```
 */
export function ownUsage(entries: readonly Entry[], now: number): PublishedUsage {
  const models: Record<string, number[]> = {};
  const readings: Record<string, number[]> = {};
  let bucketMs = 0;
  for (const e of entries) {
    const quota = e.state.quota;
    const own = quota.bucketMs;
    const merge = own > 0 ? mergeFactor(own, quota.windowMs) : 1;
    if (own > 0) bucketMs = own * merge;
    const flat = publishBuckets(quota.ownBuckets(), own, merge);
    if (flat.length > 0) models[e.field] = flat;
    // The last answer's reading, while the window it speaks of may still be running.
    const reading = own > 0 ? quota.lastReading() : undefined;
    if (reading !== undefined && reading.sentAt > now - quota.windowMs) {
      readings[e.field] = encodeReading(reading);
    }
  }
  return { at: now, bucketMs, models, readings };
}

/**
 * Each entry's bounds brought up to the limits its model knows now (configured, or learned from
 * its own answers' headers; never from a peer), in `byField`.
 *
 * @example
 * ```ts
 * const models = knownLimits(entries, byField); // byField.get('east:gpt-4o')!.tokens === 100_000
 * ```
 */
export function knownLimits(
  entries: readonly Entry[],
  byField: Map<string, PeerModelBounds>,
): Map<string, PeerModelBounds> {
  for (const { state, bounds } of entries) {
    const { tpm, rpm, itpm, otpm } = state.quota.limits;
    bounds.tokens = tpm.value || itpm.value + otpm.value;
    bounds.requests = rpm.value;
    bounds.input = itpm.value;
    bounds.output = otpm.value;
  }
  return byField;
}

/**
 * The entries a store publishes for `registry`'s models, into `entries` and `bounds` (a quota
 * pool once, under {@link poolField}), the field of each model (its cooldowns' key), and the
 * limit holders leases are kept for: each model alone, or a pool with its members.
 *
 * @example
 * ```ts
 * const { fields, holders } = entriesOf(registry, entries, bounds);
 * ```
 */
export function entriesOf(
  registry: DeploymentRegistry,
  entries: Entry[],
  bounds: Map<string, PeerModelBounds>,
): {
  fields: Map<ModelState, string>;
  holders: { states: ModelState[]; field: string }[];
} {
  const fields = new Map<ModelState, string>();
  const pools = new Map<string, { deployment: string; model: string }[]>();
  const holders: { states: ModelState[]; field: string }[] = [];
  const poolHolders = new Map<string, ModelState[]>();
  for (const d of registry.deployments.values()) {
    for (const state of d.models.values()) {
      const field = `${encodeURIComponent(d.name)}:${encodeURIComponent(state.name)}`;
      const names = { deployment: d.name, model: state.name };
      const own = { ...names, tokens: 0, requests: 0, input: 0, output: 0 };
      fields.set(state, field);
      bounds.set(field, own);
      if (state.quotaPool === undefined) {
        entries.push({ state, field, bounds: own });
        holders.push({ states: [state], field });
        continue;
      }
      // A pool's usage is published once, under the pool's name, so that the others' reports
      // add up to what the pool counted; cooldowns stay each member's.
      let members = pools.get(state.quotaPool);
      if (members === undefined) {
        pools.set(state.quotaPool, (members = []));
        const pool = { state, field: poolField(state.quotaPool), bounds: { ...own, members } };
        entries.push(pool);
        bounds.set(pool.field, pool.bounds);
        const states: ModelState[] = [];
        poolHolders.set(state.quotaPool, states);
        holders.push({ states, field: pool.field });
      }
      members.push(names);
      poolHolders.get(state.quotaPool)!.push(state);
    }
  }
  return { fields, holders };
}

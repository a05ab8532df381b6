import type { Admission } from '../quota/admission';
import type { Deployment } from '../registry/deployment';
import type { Selector } from '../selection/selector';

/**
 * The deployments of a pool grouped by the model's `priority`, most preferred (lowest) first,
 * each group in configuration order; `undefined` when they all share one priority, so a flat
 * pool keeps its single-pass selection.
 *
 * @example
 * ```ts
 * tiersOf('gpt-4o', [ptu1, payg1, ptu2]); // [[ptu1, ptu2], [payg1]]
 * ```
 */
export function tiersOf(
  model: string,
  pool: readonly Deployment[],
): readonly (readonly Deployment[])[] | undefined {
  const byPriority = new Map<number, Deployment[]>();
  for (const d of pool) {
    const priority = d.models.get(model)!.priority;
    const tier = byPriority.get(priority) ?? [];
    tier.push(d);
    byPriority.set(priority, tier);
  }
  if (byPriority.size < 2) return undefined;
  return [...byPriority.entries()].sort(([a], [b]) => a - b).map(([, tier]) => tier);
}

/**
 * The most preferred tier that has a deployment with room for `model` outside `exclude` takes
 * the call, through the selector's own choice within that tier; `undefined` when no tier has
 * room. Each tier is sampled, not scanned, while it has room: a full tier costs a scan of that
 * tier only.
 *
 * @example
 * ```ts
 * const d = chooseInTiers(selector, 'gpt-4o', tiers, tried) ?? selector.bestEffort('gpt-4o', pool);
 * ```
 */
export function chooseInTiers(
  selector: Selector,
  model: string,
  tiers: readonly (readonly Deployment[])[],
  exclude?: ReadonlySet<Deployment>,
  admission?: Admission,
): Deployment | undefined {
  for (const tier of tiers) {
    const chosen = selector.choose(model, tier, exclude, admission);
    if (chosen !== undefined) return chosen;
  }
  return undefined;
}

import type { Deployment } from './deployment';

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

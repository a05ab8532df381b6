import type { Deployment } from '../registry/deployment';

/**
 * Chooses a deployment for a model among healthy candidates. Swap it to change the strategy: pass
 * an instance to `createSwitchboard({ selector })`, or in Nest a class (resolved through DI) or a
 * provider for the `Selector` token.
 *
 * `select` is only asked when there is a real choice: the switchboard answers alone when one
 * healthy deployment serves the model, and passes every serving deployment (best effort) when
 * none is healthy.
 *
 * @example
 * ```ts
 * class LeastUtilized extends Selector {
 *   select(model: string, candidates: readonly Deployment[]): Deployment {
 *     return candidates.reduce((a, b) =>
 *       b.models.get(model)!.util < a.models.get(model)!.util ? b : a,
 *     );
 *   }
 * }
 * createSwitchboard({ deployments, selector: new LeastUtilized() });
 * ```
 */
export abstract class Selector {
  abstract select(model: string, candidates: readonly Deployment[]): Deployment;

  /**
   * Applies the switchboard's rules over every deployment that serves `model` (`pool`, never
   * empty): candidates are the healthy ones not in `exclude` (then the healthy ones; then, best
   * effort, those not cooling down; then all);
   * one candidate is taken as it is, more go to {@link select}. Selectors that can decide without
   * building the candidate list (sampling, as {@link TwoRandomChoices} does) override this and fall
   * back to it.
   */
  pick(model: string, pool: readonly Deployment[], exclude?: ReadonlySet<Deployment>): Deployment {
    let candidates = pool.filter(
      (d) => !exclude?.has(d) && (d.models.get(model)?.isHealthy() ?? false),
    );
    if (candidates.length === 0 && exclude && exclude.size > 0) {
      candidates = pool.filter((d) => d.models.get(model)?.isHealthy() ?? false);
    }
    if (candidates.length === 0) {
      // Best effort. A deployment that is only over its quota by our count may still answer;
      // one that is cooling down has just said it will not.
      candidates = pool.filter((d) => !(d.models.get(model)?.isCooling() ?? false));
      if (candidates.length === 0) candidates = pool as Deployment[];
    }
    if (candidates.length === 1) return candidates[0]!;
    const chosen = this.select(model, candidates);
    if (!candidates.includes(chosen)) {
      throw new TypeError(
        `${this.constructor.name}.select() returned ${String(chosen)}, which is not one of the candidates it was given`,
      );
    }
    return chosen;
  }
}

import type { Deployment } from '../registry/deployment';
import type { Admission } from '../quota/admission';
import { hasRoom } from '../routing/room';

/**
 * Chooses a deployment for a model among healthy candidates. Swap it to change the strategy: pass
 * an instance to `createSwitchboard({ selector })`, or in Nest a class (resolved through DI) or a
 * provider for the `Selector` token.
 *
 * `select` is only asked when there is a real choice: the switchboard answers alone when one
 * healthy deployment serves the model, and passes every serving deployment (best effort) when
 * none is healthy. With priority tiers it is asked within one tier at a time.
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
   * building the candidate list (sampling, as {@link TwoRandomChoices} does) override
   * {@link choose} and fall back to it.
   */
  pick(model: string, pool: readonly Deployment[], exclude?: ReadonlySet<Deployment>): Deployment {
    return (
      this.choose(model, pool, exclude) ??
      (exclude && exclude.size > 0 ? this.choose(model, pool) : undefined) ??
      this.bestEffort(model, pool, exclude)
    );
  }

  /**
   * A deployment of `pool` with room for `model` and not in `exclude`, or `undefined` when there
   * is none: no best effort. Tiers and fallbacks ask this of each group of deployments in turn.
   * With the call's `admission` charge, room means room for that charge (see `hasRoom`).
   *
   * @example
   * ```ts
   * const ptu = selector.choose('gpt-4o', ptuDeployments) ?? selector.choose('gpt-4o', payg);
   * ```
   */
  choose(
    model: string,
    pool: readonly Deployment[],
    exclude?: ReadonlySet<Deployment>,
    admission?: Admission,
  ): Deployment | undefined {
    const candidates = pool.filter((d) => {
      if (exclude?.has(d)) return false;
      const state = d.models.get(model);
      return state !== undefined && hasRoom(state, admission);
    });
    return candidates.length === 0 ? undefined : this.among(model, candidates);
  }

  /**
   * When no deployment of `pool` is healthy: one that is only over its quota by our count may
   * still answer; one that is cooling down has just said it will not.
   *
   * @example
   * ```ts
   * const d = selector.choose(model, pool) ?? selector.bestEffort(model, pool);
   * ```
   */
  bestEffort(
    model: string,
    pool: readonly Deployment[],
    _exclude?: ReadonlySet<Deployment>,
  ): Deployment {
    let candidates: readonly Deployment[] = pool.filter(
      (d) => !(d.models.get(model)?.isCooling() ?? false),
    );
    if (candidates.length === 0) candidates = pool;
    return this.among(model, candidates);
  }

  /** One candidate is taken as it is; more go to {@link select}, whose answer is checked. */
  protected among(model: string, candidates: readonly Deployment[]): Deployment {
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

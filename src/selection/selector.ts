import type { Deployment } from '../registry/deployment';
import type { ModelState } from '../registry/model-state';

/**
 * Which deployments of a pool may take a call now: the routing's rule (room for the call, not
 * already tried), asked of each deployment a selector looks at. The selector weighs load; the gate
 * says who may be weighed.
 *
 * @example
 * ```ts
 * const healthy: Gate = { admits: (state) => state.isHealthy() };
 * selector.pick('gpt-4o', pool, healthy);
 * ```
 */
export interface Gate {
  /** Whether `deployment`, whose state for the model is `state`, may take the call. */
  admits(state: ModelState, deployment: Deployment): boolean;
  /**
   * Optional: the clock reading (epoch ms) the gate's answers are for. A gate with one may answer
   * from a model's hot row alone ({@link admitsRow}), and a selector may weigh load there too.
   */
  readonly now?: number;
  /**
   * Optional: {@link admits} answered from a model's hot row alone (`row` of `table`, see
   * `ModelState.drawRow`) at `now`, the gate's {@link now} as the selector read it: 1 admits, 0
   * does not, -1 the row cannot tell ({@link admits} is asked). A selector drawing from thousands
   * of deployments then reads one line of memory per draw instead of the model's objects.
   */
  admitsRow?(table: Float64Array, row: number, now: number): number;
}

/**
 * Chooses a deployment for a model. Swap it to change the strategy: pass an instance to
 * `createSwitchboard({ selector })`, or in Nest a class (resolved through DI) or a provider for the
 * `Selector` token.
 *
 * The switchboard asks one thing of a selector, {@link pick}: a deployment of a pool that a
 * {@link Gate} admits. Room, tiers, sessions and best effort are the switchboard's; the selector
 * only weighs the candidates. Write a strategy by implementing {@link select} over the admitted
 * candidates (two or more); a selector that can decide without listing them (sampling, as
 * {@link TwoRandomChoices} does) overrides {@link pick} as well and falls back to it.
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
  /** One of `candidates` (two or more, each admitted for the call) for `model`. */
  abstract select(model: string, candidates: readonly Deployment[]): Deployment;

  /**
   * A deployment of `pool` that `gate` admits for `model`, or `undefined` when it admits none.
   * One admitted deployment is taken as it is; more go to {@link select}, whose answer is checked.
   *
   * @example
   * ```ts
   * const d = selector.pick('gpt-4o', ptu, gate) ?? selector.pick('gpt-4o', payg, gate);
   * ```
   */
  pick(model: string, pool: readonly Deployment[], gate: Gate): Deployment | undefined {
    let first: Deployment | undefined;
    let candidates: Deployment[] | undefined;
    for (const d of pool) {
      const state = d.models.get(model);
      if (state === undefined || !gate.admits(state, d)) continue;
      if (first === undefined) first = d;
      else (candidates ??= [first]).push(d);
    }
    if (candidates === undefined) return first;
    const chosen = this.select(model, candidates);
    if (!candidates.includes(chosen)) {
      throw new TypeError(
        `${this.constructor.name}.select() returned ${String(chosen)}, which is not one of the candidates it was given`,
      );
    }
    return chosen;
  }
}

import type { Refusal } from '../failover/refusals';
import type { Deployment } from '../registry/deployment';

/**
 * Where refusals that every deployment of a model would share (a prompt beyond its context window,
 * Azure's content filter) moved a call: the model it is now routed to as its own, with that
 * model's deployments and fallbacks, why it left, and every model that refused it. Made on the
 * first move only, so a call that keeps to its model carries one empty field for all of it.
 *
 * @example
 * ```ts
 * const moved = new ModelMove('gpt-4o');
 * moved.to('context_window', ['gpt-4.1', 'gpt-4o-mini'], registry.poolFor('gpt-4.1'));
 * moved.target; // 'gpt-4.1'
 * ```
 */
export class ModelMove {
  /** The models that refused the call. */
  readonly refusedBy = new Set<string>();
  refusal: Refusal | undefined = undefined;
  pool: readonly Deployment[] = [];
  fallbacks: readonly string[] | undefined = undefined;

  /** `target`: the model the call was routed to before its first move. */
  constructor(public target: string) {}

  /** The target refused the call for `reason`: it goes to `models` (the first with room, `pool`). */
  to(reason: Refusal, models: readonly string[], pool: readonly Deployment[]): void {
    this.refusedBy.add(this.target);
    this.refusal = reason;
    this.target = models[0]!;
    this.pool = pool;
    this.fallbacks = models.length > 1 ? models.slice(1) : undefined;
  }
}

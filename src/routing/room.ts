import type { Admission } from '../quota/admission';
import type { ModelState } from '../registry/model-state';

/**
 * Whether a model on a deployment can take one more call now: the one test that tier choice,
 * session stickiness and fallbacks share, so that they agree on what "has room" means. With the
 * call's admission charge, whether that charge fits the model's limits; without, whether the
 * model is healthy (utilization below 1, not cooling).
 *
 * @example
 * ```ts
 * const open = pool.filter((d) => hasRoom(d.models.get('gpt-4o')!));
 * ```
 */
export function hasRoom(state: ModelState, admission?: Admission): boolean {
  return admission === undefined ? state.isHealthy() : state.hasRoom(admission);
}

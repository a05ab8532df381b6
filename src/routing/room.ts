import type { ModelState } from '../registry/model-state';

/**
 * Whether a model on a deployment can take one more call now: the one test that tier choice,
 * session stickiness and fallbacks share, so that they agree on what "has room" means.
 *
 * @example
 * ```ts
 * const open = pool.filter((d) => hasRoom(d.models.get('gpt-4o')!));
 * ```
 */
export function hasRoom(state: ModelState): boolean {
  return state.isHealthy();
}

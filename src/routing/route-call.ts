import type { Deployment } from '../registry/deployment';
import type { DeploymentRegistry } from '../registry/deployment-registry';

/** Where one attempt of a call goes: a deployment, and the model it is asked for there. */
export interface Route {
  deployment: Deployment;
  /** The requested model, or the fallback standing in for it. */
  model: string;
}

/**
 * Picks the deployment and model for one attempt of a call to `model`, given its `fallbacks` (in
 * order, chains resolved; none = plain selection) and the deployments this call already `tried`:
 *
 * 1. a deployment of `model` with room that this call has not tried, most preferred tier first;
 * 2. else the first fallback model with such a deployment: the requested model's are all
 *    cooling, full, or failed for this very call;
 * 3. else the requested model as plain selection has it (a tried deployment with room, then
 *    best effort).
 *
 * A session keeps its deployment while that has room for the model asked of it; once the
 * requested model has room again, the session comes back to it.
 *
 * @example
 * ```ts
 * const { deployment, model } = routeCall(registry, 'gpt-4o', ['gpt-4o-mini'], 'user-42', tried);
 * ```
 */
export function routeCall(
  registry: DeploymentRegistry,
  model: string,
  fallbacks: readonly string[] | undefined,
  sessionId?: string,
  tried?: ReadonlySet<Deployment>,
): Route {
  if (fallbacks !== undefined) {
    const own = registry.choose(model, sessionId, tried);
    if (own !== undefined) return { deployment: own, model };
    for (const fallback of fallbacks) {
      const d = registry.choose(fallback, sessionId, tried);
      if (d !== undefined) return { deployment: d, model: fallback };
    }
  }
  return { deployment: registry.select(model, sessionId, tried), model };
}

import type { Admission } from '../quota/admission';
import type { Deployment } from '../registry/deployment';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import { RoomGate, type CallGate, type DeploymentPicker } from '../selection/pick';
import { SwitchboardError } from '../switchboard.error';
import { explanationText } from '../errors/explanation';
import { explain, SLOT_WAIT_MS } from './explanations';
import type { TagSet } from '../placement/tags';

/** Where one attempt of a call goes: a deployment, and the model it is asked for there. */
export interface Route {
  deployment: Deployment;
  /** The requested model, or the fallback standing in for it. */
  model: string;
}

/**
 * What routing reads of a call: the model it is routed to and that model's fallbacks, the key it
 * sticks by, the deployments that may take it, and the tags they must carry.
 *
 * @example
 * ```ts
 * const query: RouteQuery = { target: 'gpt-4o', targetFallbacks: ['gpt-4o-mini'], sessionId: undefined, targetPool: pool, required: undefined };
 * ```
 */
export interface RouteQuery {
  readonly target: string;
  readonly targetFallbacks: readonly string[] | undefined;
  readonly sessionId: string | undefined;
  /** The deployments of `target` that may take it (default: every one carrying `required`). */
  readonly targetPool?: readonly Deployment[];
  readonly required: TagSet | undefined;
}

/** No deployment has room for the call now: when one is expected to (ms from now). */
export interface NoRoom {
  waitMs: number;
}

/**
 * Picks the deployment and model for one attempt of `call` (its dispatch): to its `target` model,
 * given that model's fallbacks (in order, chains resolved; none = the target only), and, as its
 * gate, its `admission` charge (what the upstream counts when it admits the call) and the
 * deployments it already tried (`exclude`); `targetPool` is the target's deployments:
 *
 * 0. while every deployment that may take the call refused connections, a
 *    {@link SwitchboardError} at once, or the probe that is due (`UnreachableDeployments`);
 * 1. a deployment of `model` with room for the call that it has not tried, most preferred tier
 *    first; else the first fallback model with such a deployment;
 * 2. after a failure, when every untried deployment is down for reasons other than quota (marked
 *    down by hand, connection errors): one of those, best effort, rather than the one that has
 *    just failed this call;
 * 3. a tried deployment with room (requested model first);
 * 4. when none has room and some deployment is only full (room comes back as usage slides out,
 *    it is cooling after a 429, or every slot under its `maxInFlight` cap is taken):
 *    {@link NoRoom}, with the soonest expected room; nothing is sent into a 429, and no cap is
 *    exceeded;
 * 5. else best effort, as plain selection has it: every deployment is down.
 *
 * A call whose charge exceeds the limits of every deployment of its model (and fallbacks) can
 * never be admitted: a {@link SwitchboardError} names the sizes. Without `admission`, room means
 * healthy and the call is held back only by `maxInFlight` caps. A session keeps its deployment while that has room for
 * the model asked of it; once the requested model has room again, the session comes back to it.
 *
 * With `tags`, every step above looks only at deployments carrying each of them, fallbacks and
 * best effort included: no room there is {@link NoRoom}, never a call elsewhere; when neither the
 * model nor a fallback has such a deployment, a {@link SwitchboardError} says so.
 *
 * @example
 * ```ts
 * const gate = new RoomGate({ input: 900, output: 256 }, tried);
 * const r = routeCall(picker, dispatch); // { deployment, model } or { waitMs }
 * if ('waitMs' in r) throw new Error(`no room for ${r.waitMs} ms`);
 * ```
 */
export function routeCall(picker: DeploymentPicker, call: RouteQuery & CallGate): Route | NoRoom {
  const { target: model, targetFallbacks: fallbacks, sessionId, required: tags } = call;
  const gate: CallGate = call;
  let pool = call.targetPool;
  const { registry } = picker;
  // Every deployment refused connections: fail at once, or send the one probe that is due.
  if (registry.unreachable.size !== 0) {
    const probe = registry.unreachable.route(model, fallbacks, tags, gate);
    if (probe !== undefined) return probe;
  }
  pool ??= registry.poolFor(model, tags);
  const own = picker.withRoom(model, sessionId, gate, pool, tags);
  if (own !== undefined) return { deployment: own, model };
  if (fallbacks !== undefined) {
    for (const fallback of fallbacks) {
      const d = picker.withRoom(fallback, sessionId, gate, undefined, tags);
      if (d !== undefined) return { deployment: d, model: fallback };
    }
  }
  const { admission, exclude: tried } = gate;
  if (tried !== undefined && tried.size > 0) {
    if (untriedAllDown(pool, model, tried, admission)) {
      return { deployment: picker.select(model, sessionId, tried, tags), model };
    }
    const anyTried = new RoomGate(admission);
    const again = picker.withRoom(model, sessionId, anyTried, pool, tags);
    if (again !== undefined) return { deployment: again, model };
    for (const fallback of fallbacks ?? []) {
      const d = picker.withRoom(fallback, sessionId, anyTried, undefined, tags);
      if (d !== undefined) return { deployment: d, model: fallback };
    }
  }
  const wait = noRoom(registry, model, fallbacks, admission, tags);
  if (wait !== undefined) return wait;
  return bestEffort(picker, call);
}

/**
 * Every deployment that may take the call is down: one of the requested model's, else (when
 * tags leave the model none) of the first fallback that has one.
 */
function bestEffort(picker: DeploymentPicker, call: RouteQuery & CallGate): Route {
  const { target: model, targetFallbacks: fallbacks, sessionId, required: tags } = call;
  const tried = call.exclude;
  if (tags === undefined) return { deployment: picker.select(model, sessionId, tried), model };
  const { registry } = picker;
  for (const m of fallbacks === undefined ? [model] : [model, ...fallbacks]) {
    if (registry.poolFor(m, tags).length > 0) {
      return { deployment: picker.select(m, sessionId, tried, tags), model: m };
    }
  }
  const explanations = explain(registry, { model, fallbacks, tags, admission: undefined });
  throw new SwitchboardError(
    `No deployment of ${model}${fallbacks === undefined ? '' : ` or its fallbacks`} carries the tags ` +
      `${tags.key} this call requires (${explanationText(explanations)}). Tag a deployment that may ` +
      `serve it (deployments[].tags), or call without those tags.`,
    { code: 'model_not_found', explanations },
  );
}

const NOTHING: Admission = Object.freeze({ input: 0, output: 0 });

function untriedAllDown(
  pool: readonly Deployment[],
  model: string,
  tried: ReadonlySet<Deployment>,
  admission: Admission | undefined,
): boolean {
  let any = false;
  for (const d of pool) {
    if (tried.has(d)) continue;
    if (d.models.get(model)!.blockedBy(admission ?? NOTHING) !== 'down') return false;
    any = true;
  }
  return any;
}

/**
 * When no deployment of `model` or its fallbacks has room: the soonest expected room among those
 * that are only full (by quota, or at their cap of calls in flight), `undefined` when every one
 * is down (best effort), or a {@link SwitchboardError} when the call exceeds every one's limits.
 * A call without `admission` (it uses no quota) is only held back by caps in flight.
 */
function noRoom(
  registry: DeploymentRegistry,
  model: string,
  fallbacks: readonly string[] | undefined,
  admission: Admission | undefined,
  tags: TagSet | undefined,
): NoRoom | undefined {
  let wait = Infinity;
  let full = false;
  let fits = false;
  let largest: { limit: string; value: number; charge: number } | undefined;
  for (const m of fallbacks === undefined ? [model] : [model, ...fallbacks]) {
    for (const d of registry.poolFor(m, tags)) {
      const state = d.models.get(m)!;
      if (admission === undefined) {
        if (state.isHealthy() && !state.inFlight.hasRoom()) {
          full = true;
          wait = Math.min(wait, SLOT_WAIT_MS);
        }
        continue;
      }
      const over = state.quota.exceeds(admission);
      if (over !== undefined) {
        if (largest === undefined || over.value > largest.value) largest = over;
        continue;
      }
      fits = true;
      const blocked = state.blockedBy(admission);
      if (blocked === 'quota') {
        full = true;
        wait = Math.min(wait, state.roomAt(admission));
      } else if (blocked === 'room' && !state.inFlight.hasRoom()) {
        full = true;
        wait = Math.min(wait, SLOT_WAIT_MS);
      }
    }
  }
  if (!fits && largest !== undefined && admission !== undefined) {
    const explanations = explain(registry, { model, fallbacks, tags, admission });
    throw new SwitchboardError(
      `A call to ${model} can never fit: the upstream charges it ${largest.charge} tokens of ` +
        `${largest.limit} at admission (${admission.input} input + ${admission.output} reserved ` +
        `output), above the largest ${largest.limit} of its deployments, ${largest.value}. ` +
        `Shorten the prompt or lower its max_tokens; no deployment was marked down.`,
      { explanations },
    );
  }
  return full ? { waitMs: Number.isFinite(wait) ? wait : 0 } : undefined;
}

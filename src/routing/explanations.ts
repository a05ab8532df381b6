import type { Admission } from '../quota/admission';
import type { Deployment } from '../registry/deployment';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { DeploymentExplanation } from '../errors/explanation';
import { carries, type TagSet } from '../placement/tags';

/** A model served by thousands of deployments: the error stays small. */
const MAX_EXPLAINED = 100;
/**
 * When a slot under a `maxInFlight` cap is expected, in ms: calls end at their own pace, so the
 * routing looks again after this long (or when one ends).
 */
export const SLOT_WAIT_MS = 1_000;

/**
 * Per deployment of `model` and its `fallbacks`, why the call cannot go there now: asked only
 * once the call has failed, so it may look at every deployment (up to {@link MAX_EXPLAINED}).
 * `admission` is the call's charge (none: room means healthy), `tags` what it requires, `tried`
 * the deployments it already failed on.
 *
 * @example
 * ```ts
 * explain(registry, { model: 'gpt-4o', fallbacks: undefined, tags: tagSet(['eu']), admission: { input: 900, output: 256 } });
 * // [{ deployment: 'eu-west', model: 'gpt-4o', reason: 'no_room', retryInMs: 1200, detail: 'quota full' }, ...]
 * ```
 */
export function explain(
  registry: DeploymentRegistry,
  call: {
    model: string;
    fallbacks: readonly string[] | undefined;
    tags: TagSet | undefined;
    admission: Admission | undefined;
    tried?: ReadonlySet<Deployment>;
  },
): DeploymentExplanation[] {
  const { model, fallbacks, tags, admission, tried } = call;
  const out: DeploymentExplanation[] = [];
  for (const m of fallbacks === undefined ? [model] : [model, ...fallbacks]) {
    for (const d of registry.pools.get(m) ?? []) {
      if (out.length >= MAX_EXPLAINED) return out;
      const why = explainOne(d, m, tags, admission, tried);
      if (why !== undefined) out.push(why);
    }
  }
  return out;
}

function explainOne(
  d: Deployment,
  model: string,
  tags: TagSet | undefined,
  admission: Admission | undefined,
  tried: ReadonlySet<Deployment> | undefined,
): DeploymentExplanation | undefined {
  const base = { deployment: d.name, model };
  if (!carries(d, tags)) {
    const missing = tags!.tags.filter((t) => !d.tags.includes(t));
    return { ...base, reason: 'tags', detail: `lacks tag ${missing.join(', ')}` };
  }
  const state = d.models.get(model)!;
  if (admission !== undefined) {
    const over = state.quota.exceeds(admission);
    if (over !== undefined) {
      return {
        ...base,
        reason: 'too_large',
        detail: `${over.charge} tokens above its ${over.limit} of ${over.value}`,
      };
    }
  }
  if (state.isCooling()) {
    const why = state.downReason;
    return {
      ...base,
      reason: 'cooling',
      retryInMs: Math.ceil(state.cooldownRemaining),
      detail: why === undefined ? 'marked down' : `cooling after ${why}`,
    };
  }
  if (state.capped && !state.inFlight.hasRoom()) {
    const { count, cap } = state.inFlight;
    return {
      ...base,
      reason: 'in_flight_cap',
      retryInMs: SLOT_WAIT_MS,
      detail: `${count} calls in flight (maxInFlight ${cap})`,
    };
  }
  if (admission !== undefined && !state.hasRoom(admission)) {
    const wait = state.roomAt(admission);
    return {
      ...base,
      reason: 'no_room',
      ...(Number.isFinite(wait) ? { retryInMs: Math.ceil(wait) } : {}),
      detail: 'quota full',
    };
  }
  if (tried?.has(d)) return { ...base, reason: 'tried', detail: 'failed this call already' };
  return undefined;
}

/** The switchboard refused the call, and some deployment it passed over lacked the call's tags. */
export function refusedForTags(error: unknown): boolean {
  const list = (error as { explanations?: unknown } | null)?.explanations;
  return Array.isArray(list) && list.some((e) => (e as { reason?: unknown }).reason === 'tags');
}

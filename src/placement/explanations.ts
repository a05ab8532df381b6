import type { Admission } from '../quota/admission';
import type { Deployment } from '../registry/deployment';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import { carries, type TagSet } from './tags';

/**
 * Why a deployment did not take a call:
 * - `no_room`: its quota is full by the upstream's count until `retryInMs` from now;
 * - `cooling`: it is avoided after a 429, connection errors, 5xx or a mark-down by hand, for
 *   `retryInMs` more (`detail` says why);
 * - `in_flight_cap`: every slot under its `maxInFlight` cap is taken;
 * - `tags`: it lacks a tag the call requires;
 * - `too_large`: the call's admission charge is above one of its limits, now and always;
 * - `tried`: this call already failed there.
 */
export type PassedOverReason =
  'no_room' | 'cooling' | 'in_flight_cap' | 'tags' | 'too_large' | 'tried';

/**
 * One deployment a call could not use, and why: what the switchboard's own 429 and
 * `SwitchboardError` carry as `explanations`. Names, reasons and times only: no URL, no key.
 *
 * @example
 * ```ts
 * const e: DeploymentExplanation = {
 *   deployment: 'us-east', model: 'gpt-4o', reason: 'tags', detail: 'lacks tag eu',
 * };
 * ```
 */
export interface DeploymentExplanation {
  deployment: string;
  /** The model asked of it: the call's, or the fallback standing in for it. */
  model: string;
  reason: PassedOverReason;
  /** ms until it is expected to take the call (`no_room`, `cooling`, `in_flight_cap`). */
  retryInMs?: number;
  /** A few words for people: `tpm full`, `cooling after rate_limit`, `lacks tag eu`. */
  detail: string;
}

/** The most deployments a message names; the structured list holds up to {@link MAX_EXPLAINED}. */
const MAX_IN_MESSAGE = 6;
/** A model served by thousands of deployments: the error stays small. */
export const MAX_EXPLAINED = 100;
/** When a slot under a cap is expected (the routing's own figure). */
const SLOT_WAIT_MS = 1_000;

/**
 * Per deployment of `model` and its `fallbacks`, why the call cannot go there now: asked only
 * once the call has failed, so it may look at every deployment (up to {@link MAX_EXPLAINED}).
 * `admission` is the call's charge (none: room means healthy), `tags` what it requires, `tried`
 * the deployments it already failed on.
 *
 * @example
 * ```ts
 * explain(registry, 'gpt-4o', undefined, tagSet(['eu']), { input: 900, output: 256 });
 * // [{ deployment: 'eu-west', model: 'gpt-4o', reason: 'no_room', retryInMs: 1200, detail: 'quota full' }, ...]
 * ```
 */
export function explain(
  registry: DeploymentRegistry,
  model: string,
  fallbacks: readonly string[] | undefined,
  tags: TagSet | undefined,
  admission: Admission | undefined,
  tried?: ReadonlySet<Deployment>,
): DeploymentExplanation[] {
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

/**
 * The explanations in a few words for an error message: `eu-west: quota full, room in 1200 ms;
 * us-east: lacks tag eu`, the first {@link MAX_IN_MESSAGE} and how many more.
 *
 * @example
 * ```ts
 * explanationText(explain(registry, 'gpt-4o', undefined, undefined, admission));
 * ```
 */
export function explanationText(list: readonly DeploymentExplanation[]): string {
  const shown = list.slice(0, MAX_IN_MESSAGE).map((e) => {
    const when = e.retryInMs === undefined ? '' : `, ready in ${e.retryInMs} ms`;
    return `${e.deployment}${e.model === list[0]!.model ? '' : ` (${e.model})`}: ${e.detail}${when}`;
  });
  const more = list.length > MAX_IN_MESSAGE ? `; and ${list.length - MAX_IN_MESSAGE} more` : '';
  return shown.join('; ') + more;
}

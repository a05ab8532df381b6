import { LANE_TAGS, type CallTags } from '../scheduling/lanes';
import { sessionKey, tenantSessionKey } from '../selection/session-affinity';
import type { SessionParams } from '../types';
import { tagSet, type TagSet } from '../placement/tags';

/**
 * The switchboard's own fields of a call's params: read by the switchboard, never sent upstream.
 * Every place that tells them from the SDK's body reads this list.
 */
export const SWITCHBOARD_FIELDS = Object.freeze([
  'session_id',
  'fallbacks',
  'lane',
  'tenant',
  'tags',
  'cache',
] as const);

/** One of {@link SWITCHBOARD_FIELDS}. */
type SwitchboardField = (typeof SWITCHBOARD_FIELDS)[number];

const FIELD_SET: ReadonlySet<string> = new Set(SWITCHBOARD_FIELDS);

/**
 * Whether `key` is one of the switchboard's own fields.
 *
 * @example
 * ```ts
 * isSwitchboardField('tenant'); // true
 * isSwitchboardField('model'); // false
 * ```
 */
export function isSwitchboardField(key: string): key is SwitchboardField {
  return FIELD_SET.has(key);
}

/**
 * Whether `params` carries any of the switchboard's own fields as enumerable properties (then its
 * body must be copied without them before it goes upstream, and they are read). A field the
 * caller made non-enumerable is neither sent (the SDK's JSON leaves it out) nor read.
 *
 * @example
 * ```ts
 * hasSwitchboardFields({ model: 'gpt-4o', lane: 'batch' }); // true
 * ```
 */
export function hasSwitchboardFields(params: object): boolean {
  // Its keys, not a lookup of each of the six fields: a params object has a few, V8 keeps them
  // with its shape, and a field's absence costs a walk up the prototype chain (60 ns against 260).
  for (const key in params) if (FIELD_SET.has(key)) return true;
  return false;
}

/** The switchboard's own fields of one call's params, as {@link callBody} reads them. */
export type OwnFields = { -readonly [K in SwitchboardField]-?: SessionParams[K] | undefined };

/**
 * A record of the six fields, each `undefined`: every call's are read into one, in the same
 * shape whatever the caller's params look like.
 */
export function ownFields(): OwnFields {
  return {
    session_id: undefined,
    fallbacks: undefined,
    lane: undefined,
    tenant: undefined,
    tags: undefined,
    cache: undefined,
  };
}

/**
 * The params of a call as its caller passed them, read once at the door: the SDK's own body, and
 * the switchboard's fields taken out of it (`session_id`, `fallbacks`, `lane`, `tenant`, `tags`,
 * `cache`) into `own` (each `undefined` when absent), checked. The params object is copied only
 * when it carries such a field, in one pass over its keys: a lookup of each of the six fields on
 * the caller's object, whose shape varies from caller to caller, costs most where a field is
 * absent (see {@link hasSwitchboardFields}).
 *
 * @example
 * ```ts
 * const own = ownFields();
 * const body = callBody('sb.chat.completions', 'create', params, own);
 * own.session_id; // 'user-42'
 * ```
 */
export function callBody(
  surface: string,
  op: string,
  params: unknown,
  own: OwnFields = ownFields(),
): Record<string, unknown> {
  if (params === null || typeof params !== 'object') {
    throw new TypeError(`${surface}.${op}() expects a params object as its first argument`);
  }
  own.session_id = own.fallbacks = own.lane = own.tenant = own.tags = own.cache = undefined;
  if (!hasSwitchboardFields(params)) return params as Record<string, unknown>;
  const all = params as Record<string, unknown>;
  const fields = own as Record<SwitchboardField, unknown>;
  const body: Record<string, unknown> = {};
  // A copy of the params' own fields but the switchboard's, in their order: a loop, as a rest
  // pattern (`{ tenant, ...body }`) takes a slow generic copy in V8.
  for (const key in all) {
    if (FIELD_SET.has(key)) fields[key as SwitchboardField] = all[key];
    else if (Object.prototype.hasOwnProperty.call(all, key)) body[key] = all[key];
  }
  checkOwnFields(fields);
  return body;
}

/** A {@link TypeError} names a switchboard field of the wrong type. */
function checkOwnFields(own: Record<SwitchboardField, unknown>): void {
  const { session_id: sessionId, fallbacks, lane, tenant, tags, cache } = own;
  tagSet(tags);
  if (sessionId !== undefined && typeof sessionId !== 'string') {
    throw new TypeError(`session_id must be a string, got ${typeof sessionId}`);
  }
  if (fallbacks !== undefined && typeof fallbacks !== 'boolean') {
    throw new TypeError(
      `fallbacks must be false (no fallback model for this call) or true, got ${typeof fallbacks}`,
    );
  }
  if (lane !== undefined && lane !== 'interactive' && lane !== 'batch') {
    throw new TypeError(
      `lane must be 'interactive' or 'batch', got ${typeof lane === 'string' ? `'${lane.slice(0, 40)}'` : typeof lane}`,
    );
  }
  if (cache !== undefined && typeof cache !== 'boolean') {
    throw new TypeError(
      `cache must be false (this call is neither served from nor kept in the response cache) or true, got ${typeof cache}`,
    );
  }
  if (tenant !== undefined && typeof tenant !== 'string') {
    throw new TypeError(`tenant must be a string, got ${typeof tenant}`);
  }
}

/**
 * The call's lane and tenant (checked by {@link callBody}); a long tenant id is kept as its
 * hash, as session ids are.
 */
export function tagsOf(params: object): CallTags {
  const { lane, tenant } = params as SessionParams;
  if (tenant === undefined || tenant === '')
    return LANE_TAGS[lane === 'batch' ? 'batch' : 'interactive'];
  return { lane: lane ?? 'interactive', tenant: sessionKey(tenant) };
}

/**
 * The call's `session_id` (checked by {@link callBody}), within its tenant's space; a long id is
 * kept, looked up and shared as its hash: what the caller sends is unbounded.
 */
export function sessionIdOf(params: object): string | undefined {
  const { session_id: raw, tenant } = params as SessionParams;
  return raw === undefined ? undefined : tenantSessionKey(raw, tenant);
}

/**
 * The tags a deployment must carry to take the call (checked by {@link callBody}): the call's own
 * `tags`, and `more` that apply to all of its caller's calls (a tenant's, say). Every place that
 * reads a call's tags reads them here, so a new source of tags is one more argument.
 *
 * @example
 * ```ts
 * requiredTags({ model, messages, tags: ['eu'] }); // { tags: ['eu'], key: 'eu' }
 * ```
 */
export function requiredTags(params: object, more?: readonly string[]): TagSet | undefined {
  const own = (params as SessionParams).tags;
  return own === undefined && more === undefined ? undefined : tagSet(own, more);
}

/** Whether the call may fall back to other models (`fallbacks: false` says no). */
export function allowsFallbacks(params: object): boolean {
  return (params as SessionParams).fallbacks !== false;
}

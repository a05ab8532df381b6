import type { ApiAdapter, ApiOperation } from '../providers/adapter';
import type { SettledCall } from '../providers/call-promise';
import type { Answer } from '../registry/deployment';
import type { TagSet } from '../placement/tags';
import type { CallTags } from '../scheduling/lanes';
import {
  allowsFallbacks,
  callBody,
  ownFields,
  requiredTags,
  sessionIdOf,
  tagsOf,
} from './call-params';

/**
 * Where a call comes in: its API adapter and operation, and how its method is spelled in
 * messages (`sb.chat.completions` and `create`).
 *
 * @example
 * ```ts
 * const entry: CallEntry = { adapter: chatCompletions, op, surface: 'sb.chat.completions', opName: 'create' };
 * ```
 */
export interface CallEntry {
  readonly adapter: ApiAdapter;
  readonly op: ApiOperation;
  readonly surface: string;
  readonly opName: string;
  /**
   * Makes the promise the caller gets (the SDK's `APIPromise` kind), settled by the call's
   * dispatch; absent where the call's promise is read by the switchboard itself (`sb.fetch`).
   */
  readonly open?: (call: SettledCall) => Promise<Answer>;
}

/**
 * A call read once, from the SDK's params, `sb.fetch`'s parsed body or the gateway's: every
 * decision (tenant, tags, fallbacks, the stored object it builds on, the cache, the charge)
 * reads this record, never the params again.
 *
 * @example
 * ```ts
 * const call = readCall(entry, { model: 'gpt-4o', messages, tenant: 'acme', tags: ['eu'] }, tenants);
 * call.required?.tags; // ['eu'] and acme's own
 * ```
 */
export interface CallRecord {
  readonly entry: CallEntry;
  /** What goes upstream: the params without the switchboard's own fields. */
  readonly body: Record<string, unknown>;
  readonly model: string;
  /** Whether the answer is a stream. */
  readonly stream: boolean;
  /** The session it keeps to, hashed when long. */
  readonly sessionId: string | undefined;
  /** The tenant the caller named. */
  readonly tenant: string | undefined;
  /** Its lane and tenant, as the queue serves them. */
  readonly tags: CallTags;
  /** The tags a deployment must carry to take it: its own and its tenant's. */
  readonly required: TagSet | undefined;
  /** Whether it may fall back to other models (`fallbacks: false` says no). */
  readonly fallbacks: boolean;
  /** `cache: false`: neither served from nor kept in the response cache. */
  readonly uncached: boolean;
  /** The stored object it builds on (`previous_response_id`), if any. */
  readonly chained: string | undefined;
}

/** Each call's own fields, read into one record and read back at once (see `callBody`). */
const OWN = ownFields();

/**
 * Reads `params` into a {@link CallRecord}; a {@link TypeError} names a switchboard field of the
 * wrong type. `tenants` gives the tags a tenant's policy binds its calls to.
 *
 * @example
 * ```ts
 * readCall(entry, { model: 'gpt-4o-mini', messages, session_id: 'user-42' }).sessionId; // 'user-42'
 * ```
 */
export function readCall(
  entry: CallEntry,
  params: unknown,
  tenants?: { tagsOf(tenant: string | undefined): readonly string[] | undefined },
): CallRecord {
  // Params without the switchboard's fields are sent as they are, and `own` holds none.
  const own = OWN;
  const body = callBody(entry.surface, entry.opName, params, own);
  const { op, adapter } = entry;
  return {
    entry,
    body,
    model: body.model as string,
    stream: op.streams ? op.streams(body) : body.stream === true,
    sessionId: sessionIdOf(own),
    tenant: own.tenant,
    tags: tagsOf(own),
    required: requiredTags(own, tenants?.tagsOf(own.tenant)),
    fallbacks: allowsFallbacks(own),
    uncached: own.cache === false,
    chained: adapter.chain?.refersTo(body),
  };
}

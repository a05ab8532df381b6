import { createHash } from 'node:crypto';
import type { Sessions } from '../registry/deployment-registry';

/** Session ids longer than this are kept (and shared) as their hash. */
export const MAX_SESSION_ID_LENGTH = 256;

/**
 * The key a session is kept under: the id itself when it is at most
 * {@link MAX_SESSION_ID_LENGTH} characters, else `sha256:` and its SHA-256 in hex (71
 * characters). A client controls its session id; a map of 1024 sessions must not hold 1024 ids of
 * megabytes each. Applying it twice changes nothing.
 *
 * @example
 * ```ts
 * sessionKey('user-42'); // 'user-42'
 * sessionKey('x'.repeat(5_000_000)); // 'sha256:...' (71 characters)
 * ```
 */
export function sessionKey(sessionId: string): string {
  if (sessionId.length <= MAX_SESSION_ID_LENGTH) return sessionId;
  return `sha256:${createHash('sha256').update(sessionId, 'utf8').digest('hex')}`;
}

/**
 * The key a call's session is kept under: {@link sessionKey} of its id, within its tenant's own
 * space when it names one, so that two tenants using the same session id (or guessing another's)
 * never share a placement.
 *
 * @example
 * ```ts
 * tenantSessionKey('user-42'); // 'user-42'
 * tenantSessionKey('user-42', 'acme'); // 'tenant:…' (a hash of both)
 * ```
 */
export function tenantSessionKey(sessionId: string, tenant?: string): string {
  if (tenant === undefined || tenant === '') return sessionKey(sessionId);
  const hash = createHash('sha256').update(JSON.stringify([tenant, sessionId]), 'utf8');
  return `tenant:${hash.digest('hex')}`;
}

/** One session in {@link SessionAffinity}'s recency list. */
interface Entry {
  readonly key: string;
  value: string;
  /** Less recent neighbour (toward the one forgotten next). */
  prev: Entry | undefined;
  next: Entry | undefined;
}

/**
 * A bounded least-recently-used map from session id to deployment name. Reading a session makes
 * it the most recent; past `capacity` the least recent is forgotten.
 *
 * Recency is a linked list beside the map, so a read moves two links instead of deleting and
 * re-inserting the key: on a large heap a `Map` re-insertion on every call cost 300-900 ns
 * (`npm run bench -- --only select`, known sessions at 10 000 deployments).
 *
 * @example
 * ```ts
 * const sessions = new SessionAffinity(2);
 * sessions.set('a', 'east'); sessions.set('b', 'west'); sessions.get('a'); sessions.set('c', 'east');
 * sessions.get('b'); // undefined: 'b' was the least recently used
 * ```
 */
export class SessionAffinity implements Sessions {
  private readonly map = new Map<string, Entry>();
  /** The least recent session, forgotten first; {@link newest} the most recent. */
  private oldest: Entry | undefined = undefined;
  private newest: Entry | undefined = undefined;

  constructor(readonly capacity = 1024) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`maxSessions must be a positive integer, got ${String(capacity)}`);
    }
  }

  get size(): number {
    return this.map.size;
  }

  get(id: string): string | undefined {
    const entry = this.map.get(sessionKey(id));
    if (entry === undefined) return undefined;
    this.touch(entry);
    return entry.value;
  }

  set(id: string, deployment: string): void {
    const key = sessionKey(id);
    const entry = this.map.get(key);
    if (entry !== undefined) {
      entry.value = deployment;
      this.touch(entry);
      return;
    }
    const added: Entry = { key, value: deployment, prev: this.newest, next: undefined };
    if (this.newest !== undefined) this.newest.next = added;
    else this.oldest = added;
    this.newest = added;
    this.map.set(key, added);
    if (this.map.size > this.capacity) this.remove(this.oldest!);
  }

  delete(sessionId: string): boolean {
    const entry = this.map.get(sessionKey(sessionId));
    if (entry === undefined) return false;
    this.remove(entry);
    return true;
  }

  clear(): void {
    this.map.clear();
    this.oldest = this.newest = undefined;
  }

  /** Every session and its deployment, the least recent first. */
  *entries(): IterableIterator<[string, string]> {
    for (let e = this.oldest; e !== undefined; e = e.next) yield [e.key, e.value];
  }

  /** Make `entry` the most recent. */
  private touch(entry: Entry): void {
    if (entry === this.newest) return;
    this.unlink(entry);
    entry.prev = this.newest;
    entry.next = undefined;
    this.newest!.next = entry;
    this.newest = entry;
  }

  private remove(entry: Entry): void {
    this.unlink(entry);
    this.map.delete(entry.key);
  }

  private unlink(entry: Entry): void {
    if (entry.prev !== undefined) entry.prev.next = entry.next;
    else this.oldest = entry.next;
    if (entry.next !== undefined) entry.next.prev = entry.prev;
    else this.newest = entry.prev;
  }
}

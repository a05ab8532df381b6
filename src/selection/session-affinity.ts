import { createHash } from 'node:crypto';

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
 * A bounded least-recently-used map from session id to deployment name. Reading a session makes
 * it the most recent; past `capacity` the least recent is forgotten.
 *
 * @example
 * ```ts
 * const sessions = new SessionAffinity(2);
 * sessions.set('a', 'east'); sessions.set('b', 'west'); sessions.get('a'); sessions.set('c', 'east');
 * sessions.get('b'); // undefined: 'b' was the least recently used
 * ```
 */
export class SessionAffinity {
  private readonly map = new Map<string, string>();

  constructor(readonly capacity = 1024) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`maxSessions must be a positive integer, got ${String(capacity)}`);
    }
  }

  get size(): number {
    return this.map.size;
  }

  get(id: string): string | undefined {
    const sessionId = sessionKey(id);
    const value = this.map.get(sessionId);
    if (value !== undefined) {
      this.map.delete(sessionId);
      this.map.set(sessionId, value);
    }
    return value;
  }

  set(id: string, deployment: string): void {
    const sessionId = sessionKey(id);
    this.map.delete(sessionId);
    this.map.set(sessionId, deployment);
    if (this.map.size > this.capacity) {
      this.map.delete(this.map.keys().next().value as string);
    }
  }

  delete(sessionId: string): boolean {
    return this.map.delete(sessionKey(sessionId));
  }

  clear(): void {
    this.map.clear();
  }

  entries(): IterableIterator<[string, string]> {
    return this.map.entries();
  }
}

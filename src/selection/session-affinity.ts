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

  get(sessionId: string): string | undefined {
    const value = this.map.get(sessionId);
    if (value !== undefined) {
      this.map.delete(sessionId);
      this.map.set(sessionId, value);
    }
    return value;
  }

  set(sessionId: string, deployment: string): void {
    this.map.delete(sessionId);
    this.map.set(sessionId, deployment);
    if (this.map.size > this.capacity) {
      this.map.delete(this.map.keys().next().value as string);
    }
  }

  delete(sessionId: string): boolean {
    return this.map.delete(sessionId);
  }

  clear(): void {
    this.map.clear();
  }

  entries(): IterableIterator<[string, string]> {
    return this.map.entries();
  }
}

import { createHash } from 'node:crypto';
import { SessionAffinity } from '../../selection/session-affinity';
import { bounded, describeFailure, type RedisClientLike } from './redis-connection';

/** Session refreshes kept while Redis is unreachable. */
const MAX_PENDING_SESSIONS = 10_000;
/** Session writes per sync, so that one sync stays small; the rest go with the next. */
const SESSIONS_PER_SYNC = 1_000;
/** Stored-response writes kept while Redis is unreachable; past it the oldest is dropped. */
const MAX_PENDING_RESPONSES = 10_000;
/** Stored-response writes per sync, as for sessions. */
const RESPONSES_PER_SYNC = 1_000;
/** Longest deployment name taken from a session or response key. */
const MAX_NAME_LENGTH = 512;

/** A key to write with the next sync: its id, its key and the deployment it names. */
interface PendingKey {
  id: string;
  key: string;
  deployment: string;
}

/**
 * What {@link PointerKeys} needs of its store: the client while commands can be sent, and where
 * failures go.
 *
 * @example
 * ```ts
 * const link: PointerLink = { ready: () => client, degrade: (e) => log(e), skipped: (what) => log(what), timeout: 250 };
 * ```
 */
interface PointerLink {
  /** The client, while it is ready and the store is not degraded; else `undefined`. */
  ready(): RedisClientLike | undefined;
  /** Redis failed. */
  degrade(error: unknown): void;
  /** A value another writer left was skipped (`what` says which); logged once. */
  skipped(what: string): void;
  prefix(): string;
  timeout: number;
  sessionTtl: number;
  responseTtl: number;
}

/**
 * The keys that point a session, or a stored response, at a deployment: written at once when
 * new, refreshed with the syncs, kept for the next sync while Redis cannot be reached, looked up
 * when this instance does not know them. Redis only sees digests of the ids.
 *
 * @example
 * ```ts
 * const keys = new PointerKeys(link);
 * keys.rememberSession('user-42', 'east');
 * await keys.lookupSession('user-42'); // 'east'
 * ```
 */
export class PointerKeys {
  /** Session writes not acknowledged yet; past the bound the least recent is dropped. */
  private readonly sessionWrites = new SessionAffinity(MAX_PENDING_SESSIONS);
  /** Stored-response writes not acknowledged yet; past the bound the least recent is dropped. */
  private readonly responseWrites = new SessionAffinity(MAX_PENDING_RESPONSES);
  /** Sessions this instance has written or read: later calls only refresh their TTL. */
  private known = new SessionAffinity(1024);

  constructor(private readonly link: PointerLink) {}

  /** Remember at least this many sessions as known (the switchboard's own session bound). */
  knowAtLeast(sessions: number): void {
    this.known = new SessionAffinity(Math.max(1024, sessions));
  }

  lookupSession(sessionId: string): Promise<string | undefined> {
    return this.lookup(this.sessionKey(sessionId), 'session', (name) =>
      this.known.set(sessionId, name),
    );
  }

  rememberSession(sessionId: string, deployment: string): void {
    if (this.known.get(sessionId) === deployment) {
      // Same assignment: the TTL is refreshed with the next sync.
      this.sessionWrites.set(sessionId, deployment);
      return;
    }
    this.known.set(sessionId, deployment);
    // A new assignment is written at once, so that another instance finds it on the next turn.
    this.write(this.sessionWrites, sessionId, this.sessionKey(sessionId), deployment, 'session');
  }

  lookupResponse(responseId: string): Promise<string | undefined> {
    return this.lookup(this.responseKey(responseId), 'response');
  }

  rememberResponse(responseId: string, deployment: string): void {
    // Written at once: the next turn of the chain may well reach another instance.
    this.write(
      this.responseWrites,
      responseId,
      this.responseKey(responseId),
      deployment,
      'response',
    );
  }

  /** The writes the next sync carries (a bounded number of each); {@link giveBack} if it fails. */
  take(): { sessions: PendingKey[]; responses: PendingKey[] } {
    return {
      sessions: drain(this.sessionWrites, SESSIONS_PER_SYNC, (id) => this.sessionKey(id)),
      responses: drain(this.responseWrites, RESPONSES_PER_SYNC, (id) => this.responseKey(id)),
    };
  }

  /** A sync failed: what it carried goes with the next one, unless a newer write replaced it. */
  giveBack(taken: { sessions: PendingKey[]; responses: PendingKey[] }): void {
    for (const s of taken.sessions) {
      if (this.sessionWrites.get(s.id) === undefined) this.sessionWrites.set(s.id, s.deployment);
    }
    for (const r of taken.responses) {
      if (this.responseWrites.get(r.id) === undefined) this.responseWrites.set(r.id, r.deployment);
    }
  }

  private lookup(
    key: string,
    what: 'session' | 'response',
    found?: (name: string) => void,
  ): Promise<string | undefined> {
    const client = this.link.ready();
    // Known trouble: answer at once and let the call select locally.
    if (client === undefined) return Promise.resolve(undefined);
    return bounded(client.get(key), `${what} lookup`, this.link.timeout).then(
      (name) => {
        if (name === null) return undefined;
        if (name.length <= MAX_NAME_LENGTH) {
          found?.(name);
          return name;
        }
        this.link.skipped(`a ${what} value too long to be a deployment name`);
        return undefined;
      },
      (error: unknown) => {
        // A key of the wrong type is another writer's doing, not an outage.
        if (/WRONGTYPE/.test(describeFailure(error))) {
          this.link.skipped(`a ${what} key of the wrong type`);
        } else this.link.degrade(error);
        return undefined;
      },
    );
  }

  private write(
    pending: SessionAffinity,
    id: string,
    key: string,
    deployment: string,
    what: 'session' | 'response',
  ): void {
    const client = this.link.ready();
    if (client === undefined) {
      pending.set(id, deployment);
      return;
    }
    const ttl = what === 'session' ? this.link.sessionTtl : this.link.responseTtl;
    bounded(client.set(key, deployment, 'PX', ttl), `${what} write`, this.link.timeout).catch(
      (error: unknown) => {
        pending.set(id, deployment);
        this.link.degrade(error);
      },
    );
  }

  private sessionKey(sessionId: string): string {
    // Session ids may be user ids: Redis only sees a digest.
    return `${this.link.prefix()}session:${digest(sessionId)}`;
  }

  private responseKey(responseId: string): string {
    // Ids come from callers too (previous_response_id): a digest keeps every key short.
    return `${this.link.prefix()}response:${digest(responseId)}`;
  }
}

function digest(id: string): string {
  return createHash('sha256').update(id).digest('base64url').slice(0, 22);
}

function drain(writes: SessionAffinity, max: number, key: (id: string) => string): PendingKey[] {
  const out: PendingKey[] = [];
  for (const [id, deployment] of writes.entries()) {
    if (out.length === max) break;
    out.push({ id, key: key(id), deployment });
    writes.delete(id);
  }
  return out;
}

import { createHash, randomBytes } from 'node:crypto';
import type { SwitchboardLogger } from '../types';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { ModelEvent, ModelState } from '../registry/model-state';
import { SessionAffinity } from '../selection/session-affinity';
import { SwitchboardError } from '../switchboard.error';
import {
  bounded,
  closeClient,
  describeFailure,
  redisConnector,
  type RedisClientLike,
} from './redis/redis-connection';
import {
  resolveRedisOptions,
  type RedisStateOptions,
  type ResolvedRedisOptions,
} from './redis/redis-options';
import {
  encodeReading,
  newestReading,
  parseSyncReply,
  publishBuckets,
  sumOthers,
  SYNC_SCRIPT,
  syncCommand,
  type OthersUsage,
  type PublishedUsage,
} from './redis/redis-protocol';
import type { StateContext, StateStore, StateStoreHealth } from './state-store';

export type { RedisClientLike } from './redis/redis-connection';
export type { RedisStateOptions } from './redis/redis-options';

/**
 * Usage, cooldowns and session assignments shared by every switchboard instance that uses the
 * same Redis and prefix, so that N replicas split the quotas instead of each spending all of it.
 *
 * - Usage: every `syncInterval`, one script writes this instance's own usage per epoch-aligned
 *   bucket (1/60 of `ratelimitWindow`) and reads the others'; each instance adds up the others'
 *   buckets over its own sliding window (the `ratelimitWindow` that ends now) and routes on that
 *   plus its own usage, counted as without a store (`usageWindow`). Nothing is reset at a clock
 *   boundary: the view slides, as the upstream's count does. With it goes the rate-limit reading
 *   of each model's last answer, which the others anchor on when it is newer than their own.
 * - Cooldowns: a mark-down is published with its expiry at once; others apply it on their next
 *   sync. A mark-up clears it everywhere.
 * - Sessions: assignments are written with a sliding TTL; a session new to an instance is looked
 *   up before selection (a Redis call a request may wait for, bounded by `timeout`).
 * - Stored responses (Responses API): the deployment that created each one is written at once
 *   with a `responseTtl`; a `previous_response_id` or `retrieve(id)` that an instance does not
 *   know is looked up (the other call a request may wait for, bounded by `timeout` too).
 *
 * Redis is never required for a call to succeed: when it is down or slow, the switchboard carries
 * on with local state, logs one warning, reports `degraded` health and resumes by itself.
 * Requires the optional peer dependency `ioredis` when given a `url`.
 *
 * @example
 * ```ts
 * const sb = createSwitchboard({
 *   deployments,
 *   state: redisState({ url: process.env.REDIS_URL, syncInterval: 1000 }),
 * });
 * ```
 */
export function redisState(options: RedisStateOptions): StateStore {
  const o = resolveRedisOptions(options);
  const { connect, owned } = redisConnector(o);
  return new RedisStateStore(o, connect, owned);
}

/** Without a window, usage keys live this long after the last write. */
const UNWINDOWED_TTL = 24 * 3_600_000;
/** Most buckets per window in which usage is published: a view at most 1/60 of it too old. */
const BUCKETS_PER_WINDOW = 60;

/** How many of a window's buckets go into one published bucket. */
function mergeFactor(bucketMs: number, windowMs: number): number {
  return Math.max(1, Math.ceil(Math.round(windowMs / bucketMs) / BUCKETS_PER_WINDOW));
}
/** What a dropped connection is reported as, when nothing better is known. */
const CLOSED = 'connection closed';
/** Session refreshes kept while Redis is unreachable. */
const MAX_PENDING_SESSIONS = 10_000;
/** Session writes per sync, so that one sync stays small; the rest go with the next. */
const SESSIONS_PER_SYNC = 1_000;
/** Stored-response writes kept while Redis is unreachable; past it the oldest is dropped. */
const MAX_PENDING_RESPONSES = 10_000;
/** Stored-response writes per sync, as for sessions. */
const RESPONSES_PER_SYNC = 1_000;

interface Entry {
  state: ModelState;
  /** `<deployment>:<model>`, URI-encoded: the usage key's end and the cooldowns hash's field. */
  field: string;
  /** The cooldown end last taken from Redis, 0 if none. */
  remoteUntil: number;
}

/** @internal */
class RedisStateStore implements StateStore {
  private readonly id = randomBytes(6).toString('hex');
  private client: RedisClientLike | undefined;
  private logger: SwitchboardLogger | undefined;
  private clock: () => number = Date.now;
  private windowMs = 0;
  private entries: Entry[] = [];
  private readonly byField = new Map<string, Entry>();
  private readonly cooldownOps = new Map<string, number>();
  /** Session writes not acknowledged yet; past the bound the least recent is dropped. */
  private readonly sessionWrites = new SessionAffinity(MAX_PENDING_SESSIONS);
  /** Stored-response writes not acknowledged yet; past the bound the least recent is dropped. */
  private readonly responseWrites = new SessionAffinity(MAX_PENDING_RESPONSES);
  /** Sessions this instance has written or read: later calls only refresh their TTL. */
  private known = new SessionAffinity(1024);
  private unsubscribe: (() => void) | undefined;
  private syncTimer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private flushQueued = false;
  private attached = false;
  private closed = false;
  private problem: string | undefined;
  private lastSync = 0;
  private readonly listeners: Record<'error' | 'ready' | 'close', (...args: unknown[]) => void>;

  constructor(
    private readonly options: ResolvedRedisOptions,
    private readonly connect: () => RedisClientLike,
    private readonly ownsClient: boolean,
  ) {
    this.listeners = {
      error: (error) => this.degrade(error),
      close: () => this.degrade(CLOSED),
      ready: () => this.tick(),
    };
  }

  attach(registry: DeploymentRegistry, context: StateContext): void {
    if (this.attached) {
      throw new SwitchboardError(
        'A redisState() store serves one switchboard: call redisState() once per switchboard',
      );
    }
    this.attached = true;
    if (this.closed) return;
    this.logger = context.logger;
    this.clock = context.clock;
    this.windowMs = context.ratelimitWindow;
    this.known = new SessionAffinity(Math.max(1024, registry.sessions.capacity));
    for (const d of registry.deployments.values()) {
      for (const state of d.models.values()) {
        const id = `${encodeURIComponent(d.name)}:${encodeURIComponent(state.name)}`;
        const entry: Entry = { state, field: id, remoteUntil: 0 };
        this.entries.push(entry);
        this.byField.set(id, entry);
      }
    }
    const fields = new Map(this.entries.map((e) => [e.state, e.field]));
    this.unsubscribe = registry.onModelEvent((state, event) => {
      if (event.type === 'down' || event.type === 'up') this.onCooldown(fields.get(state), event);
    });

    const client = this.connect();
    this.client = client;
    client.on('error', this.listeners.error);
    client.on('close', this.listeners.close);
    client.on('ready', this.listeners.ready);
    this.syncTimer = setInterval(() => this.tick(), this.options.syncInterval);
    this.syncTimer.unref();
    if (client.status === 'ready') this.tick();
  }

  lookupSession(sessionId: string): Promise<string | undefined> {
    const client = this.client;
    // Known trouble: answer at once and let the call select locally.
    if (client === undefined || this.problem !== undefined || client.status !== 'ready') {
      return Promise.resolve(undefined);
    }
    return this.bounded(client.get(this.sessionKey(sessionId)), 'session lookup').then(
      (name) => {
        if (name === null) return undefined;
        this.known.set(sessionId, name);
        return name;
      },
      (error: unknown) => {
        this.degrade(error);
        return undefined;
      },
    );
  }

  rememberSession(sessionId: string, deployment: string): void {
    if (this.known.get(sessionId) === deployment) {
      // Same assignment: the TTL is refreshed with the next sync.
      this.sessionWrites.set(sessionId, deployment);
      return;
    }
    this.known.set(sessionId, deployment);
    const client = this.client;
    if (client === undefined || this.problem !== undefined || client.status !== 'ready') {
      this.sessionWrites.set(sessionId, deployment);
      return;
    }
    // A new assignment is written at once, so that another instance finds it on the next turn.
    this.bounded(
      client.set(this.sessionKey(sessionId), deployment, 'PX', this.options.sessionTtl),
      'session write',
    ).catch((error: unknown) => {
      this.sessionWrites.set(sessionId, deployment);
      this.degrade(error);
    });
  }

  lookupResponse(responseId: string): Promise<string | undefined> {
    const client = this.client;
    if (client === undefined || this.problem !== undefined || client.status !== 'ready') {
      return Promise.resolve(undefined);
    }
    return this.bounded(client.get(this.responseKey(responseId)), 'response lookup').then(
      (name) => name ?? undefined,
      (error: unknown) => {
        this.degrade(error);
        return undefined;
      },
    );
  }

  rememberResponse(responseId: string, deployment: string): void {
    const client = this.client;
    if (client === undefined || this.problem !== undefined || client.status !== 'ready') {
      this.responseWrites.set(responseId, deployment);
      return;
    }
    // Written at once: the next turn of the chain may well reach another instance.
    this.bounded(
      client.set(this.responseKey(responseId), deployment, 'PX', this.options.responseTtl),
      'response write',
    ).catch((error: unknown) => {
      this.responseWrites.set(responseId, deployment);
      this.degrade(error);
    });
  }

  health(): StateStoreHealth {
    const health: StateStoreHealth = {
      status: this.problem === undefined ? 'up' : 'degraded',
      store: 'redis',
      prefix: this.options.prefix,
      connection: this.client?.status ?? 'not started',
    };
    if (this.lastSync !== 0) health.lastSync = new Date(this.lastSync).toISOString();
    if (this.problem !== undefined) health.error = this.problem;
    return health;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.syncTimer);
    this.unsubscribe?.();
    const client = this.client;
    if (client === undefined) return;
    await this.inFlight;
    // Leave the others this instance's last usage and cooldowns.
    if (client.status === 'ready' && this.problem === undefined) {
      await this.sync(client).catch(() => undefined);
    }
    client.off('error', this.listeners.error);
    client.off('close', this.listeners.close);
    client.off('ready', this.listeners.ready);
    if (this.ownsClient) await closeClient(client, this.options.timeout);
  }

  private tick(): void {
    if (this.closed || this.client === undefined) return;
    if (this.inFlight !== undefined || this.client.status !== 'ready') return;
    this.inFlight = this.sync(this.client)
      .then(
        () => this.recover(),
        (error: unknown) => this.degrade(error),
      )
      .finally(() => {
        this.inFlight = undefined;
      });
  }

  /** One round trip: publish, write own usage, read everyone's, refresh sessions. */
  private async sync(client: RedisClientLike, usage = true): Promise<void> {
    const now = this.clock();
    const cooldowns = new Map(this.cooldownOps);
    this.cooldownOps.clear();
    const sessions: Array<{ id: string; key: string; deployment: string }> = [];
    const responses: Array<{ id: string; key: string; deployment: string }> = [];
    if (usage) {
      for (const [id, deployment] of this.sessionWrites.entries()) {
        if (sessions.length === SESSIONS_PER_SYNC) break;
        sessions.push({ id, key: this.sessionKey(id), deployment });
        this.sessionWrites.delete(id);
      }
      for (const [id, deployment] of this.responseWrites.entries()) {
        if (responses.length === RESPONSES_PER_SYNC) break;
        responses.push({ id, key: this.responseKey(id), deployment });
        this.responseWrites.delete(id);
      }
    }
    // Usage keys outlive a window a little, so that a replica a bit behind still finds them.
    const usageTtl = this.windowMs > 0 ? 2 * this.windowMs : UNWINDOWED_TTL;
    const { keys, args } = syncCommand(this.options.prefix, {
      id: this.id,
      now,
      cooldowns,
      usage: usage ? this.ownUsage(now) : undefined,
      usageTtl,
      staleBefore: now - usageTtl,
      sessions,
      sessionTtl: this.options.sessionTtl,
      responses,
      responseTtl: this.options.responseTtl,
    });

    let reply: unknown;
    try {
      reply = await this.bounded(client.eval(SYNC_SCRIPT, keys.length, ...keys, ...args), 'sync');
    } catch (error) {
      // Nothing is lost: what was not acknowledged goes out with the next sync (a newer value wins).
      for (const [field, until] of cooldowns) {
        if (!this.cooldownOps.has(field)) this.cooldownOps.set(field, until);
      }
      for (const s of sessions) {
        if (this.sessionWrites.get(s.id) === undefined) this.sessionWrites.set(s.id, s.deployment);
      }
      for (const r of responses) {
        if (this.responseWrites.get(r.id) === undefined)
          this.responseWrites.set(r.id, r.deployment);
      }
      throw error;
    }
    const { others, cooling } = parseSyncReply(reply);
    if (usage) {
      this.applyOthers(sumOthers(others, this.clock(), this.windowMs));
      this.applyReadings(others);
    }
    this.applyCooldowns(cooling);
    if (usage) this.lastSync = this.clock();
  }

  private applyCooldowns(cooling: ReadonlyArray<[string, number]>): void {
    const seen = new Set<Entry>();
    for (const [field, until] of cooling) {
      const entry = this.byField.get(field);
      if (entry === undefined) continue;
      seen.add(entry);
      const local = entry.state.cooldownUntil;
      if (until > local) entry.state.applyCooldown(until);
      if (until >= local) entry.remoteUntil = until;
    }
    for (const entry of this.entries) {
      if (entry.remoteUntil === 0 || seen.has(entry)) continue;
      // Gone from Redis: expired, or marked up elsewhere. Only a cooldown taken from Redis is
      // lifted; one this instance decided alone and could not publish yet stays.
      if (entry.state.cooldownUntil === entry.remoteUntil && !this.cooldownOps.has(entry.field)) {
        entry.state.applyCooldown(0);
      }
      entry.remoteUntil = 0;
    }
  }

  private onCooldown(field: string | undefined, event: ModelEvent): void {
    if (field === undefined || this.closed) return;
    this.cooldownOps.set(field, event.type === 'down' ? event.until : 0);
    if (this.flushQueued) return;
    this.flushQueued = true;
    // Several models often go down together: one round trip for all of them.
    queueMicrotask(() => {
      this.flushQueued = false;
      const client = this.client;
      if (this.closed || client === undefined || client.status !== 'ready') return;
      this.sync(client, false).catch((error: unknown) => this.degrade(error));
    });
  }

  /**
   * This instance's own usage per bucket, as published: the models' own windows, whose buckets
   * are epoch-aligned, merged into at most {@link BUCKETS_PER_WINDOW} per window to keep each
   * sync small. A fixed window is one bucket that never ages (its owner resets it).
   */
  private ownUsage(now: number): PublishedUsage {
    const models: Record<string, number[]> = {};
    const readings: Record<string, number[]> = {};
    let bucketMs = 0;
    for (const e of this.entries) {
      const window = e.state.window;
      const merge = window.bucketMs > 0 ? mergeFactor(window.bucketMs, window.windowMs) : 1;
      if (window.bucketMs > 0) bucketMs = window.bucketMs * merge;
      const flat = publishBuckets(window.ownBuckets(), window.bucketMs, merge);
      if (flat.length > 0) models[e.field] = flat;
      // The last answer's reading, while the window it speaks of may still be running.
      const reading = window.bucketMs > 0 ? e.state.lastReading() : undefined;
      if (reading !== undefined && reading.sentAt > now - window.windowMs) {
        readings[e.field] = encodeReading(reading);
      }
    }
    return { at: now, bucketMs, models, readings };
  }

  /**
   * Each model anchors on the latest answer another instance had from it, when that one is newer
   * than any it anchored on: a replica that stopped sending to a deployment it counts as full
   * learns from the others' answers when room came back there, and one that sends there sees
   * what others' calls and other applications took.
   */
  private applyReadings(others: readonly PublishedUsage[]): void {
    for (const { state, field } of this.entries) {
      const reading = newestReading(others, field);
      if (reading !== undefined) state.replay(reading);
    }
  }

  /**
   * The others' usage over the sliding window becomes each model's shared view, by when it was
   * sent: the model's accounting leaves out what the upstream's own count already holds, or has
   * forgotten (see `SharedUsage.sent`).
   */
  private applyOthers(sums: ReadonlyMap<string, OthersUsage>): void {
    for (const { state, field } of this.entries) {
      const sum = sums.get(field);
      const shared = (state.shared ??= { tokens: 0, requests: 0, recentRequests: 0 });
      shared.tokens = sum?.tokens ?? 0;
      shared.requests = sum?.requests ?? 0;
      shared.recentRequests = sum?.recentRequests ?? 0;
      // A fixed window has no send times that matter: its owner resets it.
      if (state.window.bucketMs > 0) shared.sent = { spans: sum?.spans ?? [] };
      else delete shared.sent;
    }
  }

  private sessionKey(sessionId: string): string {
    // Session ids may be user ids: Redis only sees a digest.
    const digest = createHash('sha256').update(sessionId).digest('base64url').slice(0, 22);
    return `${this.options.prefix}session:${digest}`;
  }

  private responseKey(responseId: string): string {
    // Ids come from callers too (previous_response_id): a digest keeps every key short.
    const digest = createHash('sha256').update(responseId).digest('base64url').slice(0, 22);
    return `${this.options.prefix}response:${digest}`;
  }

  private bounded<T>(promise: Promise<T>, what: string): Promise<T> {
    return bounded(promise, what, this.options.timeout);
  }

  /** One warning per outage: the first failure logs, the next successful sync ends it. */
  private degrade(reason: unknown): void {
    if (this.closed) return;
    const message = describeFailure(reason);
    if (this.problem !== undefined) {
      // Keep the cause, not the 'connection closed' that follows it.
      if (reason !== CLOSED) this.problem = message;
      return;
    }
    this.problem = message;
    this.logger?.warn(
      `Redis state store unavailable (${message}): carrying on with local usage, cooldowns and sessions until it is back`,
    );
  }

  private recover(): void {
    if (this.problem === undefined) return;
    this.problem = undefined;
    this.logger?.log('Redis state store reachable again: sharing usage, cooldowns and sessions');
  }
}

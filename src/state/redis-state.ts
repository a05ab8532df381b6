import { createHash, randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import type { SwitchboardLogger } from '../types';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { ModelEvent, ModelState } from '../registry/model-state';
import { emptyPeerReport, type PeerReport } from './peer-report';
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
  checkPeers,
  PEER_PROBLEMS,
  type PeerModelBounds,
  type PeerProblem,
} from './redis/peer-checks';
import {
  defaultPrefix,
  redactUrl,
  resolveRedisOptions,
  secretScrubber,
  type RedisStateOptions,
  type ResolvedRedisOptions,
} from './redis/redis-options';
import { encodeReading, publishBuckets, type PublishedUsage } from './redis/redis-protocol';
import {
  DEFAULT_MAX_COOLDOWN,
  DEFAULT_SKEW,
  readSyncReply,
  SYNC_SCRIPT,
  syncCommand,
} from './redis/sync-script';
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
/** Most instances whose usage one sync reads. */
const MAX_INSTANCES = 1024;
/** Longest deployment name taken from a session or response key. */
const MAX_NAME_LENGTH = 512;

interface Entry {
  state: ModelState;
  /** `<deployment>:<model>`, URI-encoded: the cooldowns hash's field and the usage's key. */
  field: string;
  /** The bounds of what the others may report for it. */
  bounds: PeerModelBounds;
}

/** @internal */
class RedisStateStore implements StateStore {
  private readonly id = randomBytes(6).toString('hex');
  private client: RedisClientLike | undefined;
  private logger: SwitchboardLogger | undefined;
  private onReport: ((report: PeerReport) => void) | undefined;
  private clock: () => number = Date.now;
  private windowMs = 0;
  private maxCooldown = DEFAULT_MAX_COOLDOWN;
  private prefix: string | undefined;
  private entries: Entry[] = [];
  private readonly bounds = new Map<string, PeerModelBounds>();
  private readonly cooldownOps = new Map<string, number>();
  /** Session writes not acknowledged yet; past the bound the least recent is dropped. */
  private readonly sessionWrites = new SessionAffinity(MAX_PENDING_SESSIONS);
  /** Stored-response writes not acknowledged yet; past the bound the least recent is dropped. */
  private readonly responseWrites = new SessionAffinity(MAX_PENDING_RESPONSES);
  /** Sessions this instance has written or read: later calls only refresh their TTL. */
  private known = new SessionAffinity(1024);
  /** Kinds of bad values already logged (again once a sync finds none of the kind). */
  private readonly logged = new Set<PeerProblem | 'session'>();
  private readonly scrub: (text: string) => string;
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
    this.prefix = options.prefix;
    this.scrub = secretScrubber(options.url);
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
    this.onReport = context.onReport;
    this.clock = context.clock;
    this.windowMs = context.ratelimitWindow;
    this.maxCooldown = context.maxCooldown ?? DEFAULT_MAX_COOLDOWN;
    this.known = new SessionAffinity(Math.max(1024, registry.sessions.capacity));
    const identity: Array<{ name: string; endpoint: string; models: string[] }> = [];
    for (const d of registry.deployments.values()) {
      const { baseURL } = (d.client ?? {}) as { baseURL?: unknown };
      identity.push({
        name: d.name,
        endpoint: typeof baseURL === 'string' ? baseURL : '',
        models: [...d.models.keys()],
      });
      for (const state of d.models.values()) {
        const field = `${encodeURIComponent(d.name)}:${encodeURIComponent(state.name)}`;
        const bounds = {
          deployment: d.name,
          model: state.name,
          tokens: 0,
          requests: 0,
          input: 0,
          output: 0,
        };
        this.entries.push({ state, field, bounds });
        this.bounds.set(field, bounds);
      }
    }
    this.prefix ??= defaultPrefix(identity);
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

  sync(): Promise<PeerReport> {
    const client = this.client;
    if (this.closed || client === undefined || client.status !== 'ready') {
      return Promise.resolve(emptyPeerReport(this.clock()));
    }
    return this.syncWith(client).then(
      (report) => {
        this.recover();
        return report;
      },
      (error: unknown) => {
        this.degrade(error);
        return emptyPeerReport(this.clock());
      },
    );
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
        if (name.length > MAX_NAME_LENGTH) {
          this.report('session', 'skipped a session value too long to be a deployment name');
          return undefined;
        }
        this.known.set(sessionId, name);
        return name;
      },
      (error: unknown) => this.lookupFailed(error),
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
      (name) => (name === null || name.length > MAX_NAME_LENGTH ? undefined : name),
      (error: unknown) => this.lookupFailed(error),
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
      prefix: this.prefix,
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
    // Leave the others this instance's last usage and cooldowns (and read theirs a last time).
    if (client.status === 'ready' && this.problem === undefined) {
      await this.syncWith(client).then(this.onReport, () => undefined);
    }
    client.off('error', this.listeners.error);
    client.off('close', this.listeners.close);
    client.off('ready', this.listeners.ready);
    if (this.ownsClient) await closeClient(client, this.options.timeout);
  }

  /** What `inspect()` and `JSON.stringify` show: never the URL's password. */
  [inspect.custom](): string {
    return `RedisStateStore ${inspect(this.toJSON())}`;
  }

  toJSON(): Record<string, unknown> {
    const url = this.options.url === undefined ? undefined : redactUrl(this.options.url);
    return { ...(url === undefined ? {} : { url }), ...this.health() };
  }

  private tick(): void {
    if (this.closed || this.client === undefined) return;
    if (this.inFlight !== undefined || this.client.status !== 'ready') return;
    this.inFlight = this.syncWith(this.client)
      .then(
        (report) => {
          this.recover();
          this.onReport?.(report);
        },
        (error: unknown) => this.degrade(error),
      )
      .finally(() => {
        this.inFlight = undefined;
      });
  }

  /**
   * One round trip: publish, write own usage, read everyone's, refresh sessions; then check what
   * was read and return it. Writes into no model.
   */
  private async syncWith(client: RedisClientLike, usage = true): Promise<PeerReport> {
    const now = this.clock();
    const cooldowns = new Map(this.cooldownOps);
    this.cooldownOps.clear();
    const sessions = usage
      ? this.drain(this.sessionWrites, SESSIONS_PER_SYNC, this.sessionKey)
      : [];
    const responses = usage
      ? this.drain(this.responseWrites, RESPONSES_PER_SYNC, this.responseKey)
      : [];
    // Usage keys outlive a window a little, so that a replica a bit behind still finds them.
    const usageTtl = this.windowMs > 0 ? 2 * this.windowMs : UNWINDOWED_TTL;
    const models = this.entries.length;
    const { keys, args } = syncCommand(this.prefix!, {
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
      skew: DEFAULT_SKEW,
      maxCooldown: this.maxCooldown,
      maxUsageFields: MAX_INSTANCES,
      maxCooldownFields: Math.max(1024, 2 * models),
      maxValueLength: 8192 + 4096 * models,
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
    const { report, problems } = checkPeers(readSyncReply(reply), this.limits(), usage);
    this.logProblems(problems, usage);
    if (usage) this.lastSync = this.clock();
    return report;
  }

  /** The bounds of this sync's checks: the limits each model knows now. */
  private limits() {
    for (const { state, bounds } of this.entries) {
      bounds.tokens = state.tpm || state.itpm + state.otpm;
      bounds.requests = state.rpm;
      bounds.input = state.itpm;
      bounds.output = state.otpm;
    }
    return {
      now: this.clock(),
      windowMs: this.windowMs,
      skewMs: DEFAULT_SKEW,
      maxCooldown: this.maxCooldown,
      models: this.bounds,
    };
  }

  /** One warning per kind of bad value; the kind logs again once a sync has found none of it. */
  private logProblems(problems: ReadonlyMap<PeerProblem, string>, full: boolean): void {
    for (const [kind, example] of problems) {
      this.report(kind, `${PEER_PROBLEMS[kind]} (first: ${example})`);
    }
    if (!full) return;
    for (const kind of this.logged) {
      if (kind !== 'session' && !problems.has(kind)) this.logged.delete(kind);
    }
  }

  private report(kind: PeerProblem | 'session', what: string): void {
    if (this.logged.has(kind)) return;
    this.logged.add(kind);
    this.logger?.warn(
      this.scrub(
        `Redis state store: ${what} under '${this.prefix}'; another writer shares this prefix (set redisState({ prefix }) to part from it). Logged once.`,
      ),
    );
  }

  /** A failed lookup: a key of the wrong type is another writer's doing, not an outage. */
  private lookupFailed(error: unknown): undefined {
    if (/WRONGTYPE/.test(describeFailure(error))) {
      this.report('key-type', 'skipped a session or response key of the wrong type');
    } else this.degrade(error);
    return undefined;
  }

  private drain(
    writes: SessionAffinity,
    max: number,
    key: (id: string) => string,
  ): Array<{ id: string; key: string; deployment: string }> {
    const out: Array<{ id: string; key: string; deployment: string }> = [];
    for (const [id, deployment] of writes.entries()) {
      if (out.length === max) break;
      out.push({ id, key: key.call(this, id), deployment });
      writes.delete(id);
    }
    return out;
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
      this.syncWith(client, false).then(
        (report) => this.onReport?.(report),
        (error: unknown) => this.degrade(error),
      );
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

  private sessionKey(sessionId: string): string {
    // Session ids may be user ids: Redis only sees a digest.
    const digest = createHash('sha256').update(sessionId).digest('base64url').slice(0, 22);
    return `${this.prefix}session:${digest}`;
  }

  private responseKey(responseId: string): string {
    // Ids come from callers too (previous_response_id): a digest keeps every key short.
    const digest = createHash('sha256').update(responseId).digest('base64url').slice(0, 22);
    return `${this.prefix}response:${digest}`;
  }

  private bounded<T>(promise: Promise<T>, what: string): Promise<T> {
    return bounded(promise, what, this.options.timeout);
  }

  /** One warning per outage: the first failure logs, the next successful sync ends it. */
  private degrade(reason: unknown): void {
    if (this.closed) return;
    const message = this.scrub(describeFailure(reason));
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

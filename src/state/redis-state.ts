import { createHash, randomBytes } from 'node:crypto';
import type { SwitchboardLogger } from '../config/switchboard-options';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { ModelEvent, ModelState } from '../registry/model-state';
import { SwitchboardError } from '../switchboard.error';
import { SYNC_SCRIPT } from './redis-scripts';
import type { StateContext, StateStore, StateStoreHealth } from './state-store';

/**
 * The part of an `ioredis` client (`Redis` or `Cluster`) that {@link redisState} uses, so that the
 * switchboard's types do not require `ioredis` to be installed.
 *
 * @example
 * ```ts
 * import Redis from 'ioredis';
 * const client: RedisClientLike = new Redis(process.env.REDIS_URL!);
 * ```
 */
export interface RedisClientLike {
  /** `ready` while commands can be sent. */
  readonly status: string;
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  get(key: string): Promise<string | null>;
  set(key: string, value: string, px: 'PX', milliseconds: number): Promise<unknown>;
  on(event: 'error' | 'ready' | 'close', listener: (...args: unknown[]) => void): unknown;
  off(event: 'error' | 'ready' | 'close', listener: (...args: unknown[]) => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
}

/**
 * Options of {@link redisState}: one of `url` or `client`.
 *
 * @example
 * ```ts
 * const options: RedisStateOptions = { url: 'redis://redis:6379/0', prefix: 'chat-api:', syncInterval: 500 };
 * ```
 */
export interface RedisStateOptions {
  /** `redis://[[user]:password@]host:port[/db]`, or `rediss://` for TLS. The store owns this connection. */
  url?: string;
  /**
   * An `ioredis` client (`Redis`, or `Cluster` with a `{hash-tag}` in `prefix`) that you own: the
   * store does not close it. Prefer `url`, which sets the short timeouts the store relies on.
   */
  client?: RedisClientLike;
  /** Prefix of every key. Default `'switchboard:'`. */
  prefix?: string;
  /** ms between two syncs of usage and cooldowns. Default 1000. */
  syncInterval?: number;
  /** ms a session's deployment is kept after its last call (sliding). Default 3 600 000 (1 h). */
  sessionTtl?: number;
  /** ms any Redis operation may take before it counts as failed. Default 250. */
  timeout?: number;
}

/**
 * Usage, cooldowns and session assignments shared by every switchboard instance that uses the
 * same Redis and prefix, so that N replicas split the quotas instead of each spending all of it.
 *
 * - Usage: every `syncInterval`, one script writes this instance's usage of the current window
 *   and reads everyone's; instances route on the cluster total as of the last sync plus their own
 *   since. Windows are `ratelimitWindow` long and aligned to the clock, so all instances reset
 *   together.
 * - Cooldowns: a mark-down is published with its expiry at once; others apply it on their next
 *   sync. A mark-up clears it everywhere.
 * - Sessions: assignments are written with a sliding TTL; a session new to an instance is looked
 *   up before selection (the only Redis call a request may wait for, bounded by `timeout`).
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
  const o = validate(options);
  let connect: () => RedisClientLike;
  if (o.client !== undefined) {
    const client = o.client;
    connect = () => client;
  } else {
    const Redis = loadIoredis();
    const url = o.url!;
    connect = () =>
      new Redis(url, {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        commandTimeout: o.timeout,
        connectTimeout: Math.max(1000, o.timeout * 4),
        // ioredis arms this timer on disconnect even for a dead socket; it holds the process open.
        disconnectTimeout: o.timeout,
        retryStrategy: (times: number) => Math.min(times * 100, 1000),
        connectionName: 'switchboard',
      });
  }
  return new RedisStateStore(o, connect, o.client === undefined);
}

type Resolved = Required<Omit<RedisStateOptions, 'url' | 'client'>> &
  Pick<RedisStateOptions, 'url' | 'client'>;

/** Without a window, usage keys live this long after the last write. */
const UNWINDOWED_TTL = 24 * 3_600_000;
/** What a dropped connection is reported as, when nothing better is known. */
const CLOSED = 'connection closed';
/** Session refreshes kept while Redis is unreachable. */
const MAX_PENDING_SESSIONS = 10_000;
/** Session writes per sync, so that one sync stays small; the rest go with the next. */
const SESSIONS_PER_SYNC = 1_000;

interface Entry {
  state: ModelState;
  /** `<deployment>:<model>`, URI-encoded: the usage key's end and the cooldowns hash's field. */
  field: string;
  /** The cooldown end last taken from Redis, 0 if none. */
  remoteUntil: number;
}

/** @internal */
class RedisStateStore implements StateStore {
  readonly resetsUsage = true;
  private readonly id = randomBytes(6).toString('hex');
  private client: RedisClientLike | undefined;
  private logger: SwitchboardLogger | undefined;
  private clock: () => number = Date.now;
  private windowMs = 0;
  private window = 0;
  /** Bumped at every window change, so that a sync of the previous window is not applied. */
  private generation = 0;
  private entries: Entry[] = [];
  private readonly byField = new Map<string, Entry>();
  private readonly cooldownOps = new Map<string, number>();
  private readonly sessionWrites = new Map<string, string>();
  /** Sessions this instance has written or read, by id: later calls only refresh their TTL. */
  private readonly known = new Map<string, string>();
  private knownCapacity = 1024;
  private unsubscribe: (() => void) | undefined;
  private syncTimer: NodeJS.Timeout | undefined;
  private windowTimer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private flushQueued = false;
  private attached = false;
  private closed = false;
  private problem: string | undefined;
  private lastSync = 0;
  private readonly listeners: Record<'error' | 'ready' | 'close', (...args: unknown[]) => void>;

  constructor(
    private readonly options: Resolved,
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
    this.window = this.currentWindow();
    this.knownCapacity = Math.max(1024, registry.sessions.capacity);
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
      if (event.type !== 'spend') this.onCooldown(fields.get(state), event);
    });

    const client = this.connect();
    this.client = client;
    client.on('error', this.listeners.error);
    client.on('close', this.listeners.close);
    client.on('ready', this.listeners.ready);
    this.syncTimer = setInterval(() => this.tick(), this.options.syncInterval);
    this.syncTimer.unref();
    this.scheduleWindow();
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
        this.know(sessionId, name);
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
      this.queueSession(sessionId, deployment);
      return;
    }
    this.know(sessionId, deployment);
    const client = this.client;
    if (client === undefined || this.problem !== undefined || client.status !== 'ready') {
      this.queueSession(sessionId, deployment);
      return;
    }
    // A new assignment is written at once, so that another instance finds it on the next turn.
    this.bounded(
      client.set(this.sessionKey(sessionId), deployment, 'PX', this.options.sessionTtl),
      'session write',
    ).catch((error: unknown) => {
      this.queueSession(sessionId, deployment);
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
    clearTimeout(this.windowTimer);
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
    if (!this.ownsClient) return;
    // ioredis emits errors after quit() when the server is gone; nobody should hear them.
    client.on('error', () => undefined);
    if (client.status !== 'ready') client.disconnect();
    else await this.bounded(client.quit(), 'quit').catch(() => client.disconnect());
  }

  private tick(): void {
    if (this.closed || this.client === undefined) return;
    this.roll();
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
    const generation = this.generation;
    const now = this.clock();
    const prefix = this.options.prefix;
    const ops = new Map(this.cooldownOps);
    this.cooldownOps.clear();
    const sessions = new Map<string, string>();
    if (usage) {
      for (const [id, deployment] of this.sessionWrites) {
        if (sessions.size === SESSIONS_PER_SYNC) break;
        sessions.set(id, deployment);
        this.sessionWrites.delete(id);
      }
    }
    const entries = usage ? this.entries : [];

    const keys: string[] = [`${prefix}cooldowns`];
    const args: (string | number)[] = [
      this.id,
      this.expireAt(now),
      now,
      entries.length,
      ops.size,
      this.options.sessionTtl,
    ];
    for (const [field, until] of ops) args.push(field, until);
    const base = `${prefix}usage:${this.window * this.windowMs}:`;
    for (const e of entries) {
      keys.push(base + e.field);
      const own = e.state.localUsage;
      args.push(Math.round(own.tokens), Math.round(own.requests));
    }
    for (const [id, deployment] of sessions) {
      keys.push(this.sessionKey(id));
      args.push(deployment);
    }

    let reply: unknown;
    try {
      reply = await this.bounded(client.eval(SYNC_SCRIPT, keys.length, ...keys, ...args), 'sync');
    } catch (error) {
      // Nothing is lost: what was not acknowledged goes out with the next sync (a newer value wins).
      for (const [field, until] of ops) {
        if (!this.cooldownOps.has(field)) this.cooldownOps.set(field, until);
      }
      for (const [id, deployment] of sessions) {
        if (!this.sessionWrites.has(id)) this.queueSession(id, deployment);
      }
      throw error;
    }
    const [others, cooling] = reply as [number[], string[]];
    if (generation === this.generation) {
      for (let i = 0; i < entries.length; i++) {
        const state = entries[i]!.state;
        const tokens = Number(others[2 * i]);
        const requests = Number(others[2 * i + 1]);
        if (state.shared === undefined) state.shared = { tokens, requests };
        else {
          state.shared.tokens = tokens;
          state.shared.requests = requests;
        }
      }
    }
    this.applyCooldowns(cooling);
    if (usage) this.lastSync = this.clock();
  }

  private applyCooldowns(cooling: readonly string[]): void {
    const seen = new Set<Entry>();
    for (let j = 0; j < cooling.length; j += 2) {
      const entry = this.byField.get(cooling[j]!);
      if (entry === undefined) continue;
      const until = Number(cooling[j + 1]);
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

  /** Start a new usage window when the clock has crossed into one. */
  private roll(): void {
    if (this.windowMs <= 0) return;
    const window = this.currentWindow();
    if (window === this.window) return;
    this.window = window;
    this.generation++;
    for (const { state } of this.entries) {
      state.resetUsage();
      if (state.shared !== undefined) {
        state.shared.tokens = 0;
        state.shared.requests = 0;
      }
    }
  }

  private scheduleWindow(): void {
    if (this.windowMs <= 0 || this.closed) return;
    const next = (this.currentWindow() + 1) * this.windowMs - this.clock();
    this.windowTimer = setTimeout(
      () => {
        this.roll();
        this.scheduleWindow();
      },
      Math.min(Math.max(next, 10), this.windowMs),
    );
    this.windowTimer.unref();
  }

  private currentWindow(): number {
    return this.windowMs > 0 ? Math.floor(this.clock() / this.windowMs) : 0;
  }

  private expireAt(now: number): number {
    // A little past the window's end, so that clocks a bit behind still find the key.
    return this.windowMs > 0
      ? (this.window + 1) * this.windowMs + Math.min(this.windowMs, 60_000)
      : now + UNWINDOWED_TTL;
  }

  private sessionKey(sessionId: string): string {
    // Session ids may be user ids: Redis only sees a digest.
    const digest = createHash('sha256').update(sessionId).digest('base64url').slice(0, 22);
    return `${this.options.prefix}session:${digest}`;
  }

  private know(sessionId: string, deployment: string): void {
    this.known.delete(sessionId);
    this.known.set(sessionId, deployment);
    if (this.known.size > this.knownCapacity) {
      this.known.delete(this.known.keys().next().value as string);
    }
  }

  private queueSession(sessionId: string, deployment: string): void {
    if (this.sessionWrites.size >= MAX_PENDING_SESSIONS && !this.sessionWrites.has(sessionId)) {
      this.sessionWrites.delete(this.sessionWrites.keys().next().value as string);
    }
    this.sessionWrites.set(sessionId, deployment);
  }

  private bounded<T>(promise: Promise<T>, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`Redis ${what} took longer than ${this.options.timeout} ms`)),
        this.options.timeout,
      );
    });
    promise.catch(() => undefined); // a late failure after the timeout is not unhandled
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  }

  /** One warning per outage: the first failure logs, the next successful sync ends it. */
  private degrade(reason: unknown): void {
    if (this.closed) return;
    const message = describe(reason);
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

function describe(reason: unknown): string {
  if (reason instanceof Error) return reason.message || reason.name;
  return String(reason);
}

type IoredisConstructor = new (url: string, options: Record<string, unknown>) => RedisClientLike;

function loadIoredis(): IoredisConstructor {
  let mod: unknown;
  try {
    // Loaded here, not at import: applications without Redis never need the package.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    mod = require('ioredis');
  } catch (error) {
    const { code } = (error ?? {}) as { code?: unknown };
    if (code === 'MODULE_NOT_FOUND') {
      throw new SwitchboardError(
        'redisState() needs the ioredis package: run `npm install ioredis` (or pass an ioredis instance as `client`)',
        { cause: error },
      );
    }
    throw error;
  }
  const m = mod as { Redis?: unknown; default?: unknown };
  return (m.Redis ?? m.default ?? mod) as IoredisConstructor;
}

function validate(options: RedisStateOptions): Resolved {
  if (options === null || typeof options !== 'object') {
    throw new SwitchboardError('redisState() expects an options object: redisState({ url })');
  }
  const { url, client } = options;
  if ((url === undefined) === (client === undefined)) {
    throw new SwitchboardError(
      'redisState() needs exactly one of `url` (e.g. redis://localhost:6379) or `client` (an ioredis instance)',
    );
  }
  if (url !== undefined && (typeof url !== 'string' || !/^rediss?:\/\//.test(url))) {
    throw new SwitchboardError(
      'redisState({ url }) must be a redis:// or rediss:// URL, e.g. redis://localhost:6379',
    );
  }
  if (client !== undefined && (client === null || typeof client.eval !== 'function')) {
    throw new SwitchboardError('redisState({ client }) must be an ioredis Redis or Cluster client');
  }
  const prefix = options.prefix ?? 'switchboard:';
  if (typeof prefix !== 'string' || prefix === '') {
    throw new SwitchboardError("redisState({ prefix }) must be a non-empty string, e.g. 'myapp:'");
  }
  return {
    url,
    client,
    prefix,
    syncInterval: positive(options.syncInterval, 1000, 'syncInterval'),
    sessionTtl: positive(options.sessionTtl, 3_600_000, 'sessionTtl'),
    timeout: positive(options.timeout, 250, 'timeout'),
  };
}

function positive(value: number | undefined, fallback: number, key: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new SwitchboardError(
      `redisState({ ${key} }) must be a positive number of milliseconds, got ${String(value)}`,
    );
  }
  return Math.ceil(value);
}

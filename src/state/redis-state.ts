import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import type { SwitchboardLogger } from '../types';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { ModelEvent } from '../registry/model-event';
import { emptyPeerReport, type PeerReport } from './peer-report';
import { SwitchboardError } from '../switchboard.error';
import {
  bounded,
  closeClient,
  describeFailure,
  redisConnector,
  type RedisClientLike,
} from './redis/redis-connection';
import { checkPeers, type PeerBounds, type PeerModelBounds } from './redis/peer-checks';
import { ProblemLog } from './redis/problem-log';
import { CLOSED, Outage } from './redis/outage';
import { PointerKeys } from './redis/pointer-keys';
import {
  defaultPrefix,
  redactUrl,
  resolveRedisOptions,
  secretScrubber,
  type RedisStateOptions,
  type ResolvedRedisOptions,
} from './redis/redis-options';
import { entriesOf, knownLimits, ownUsage, type Entry } from './redis/own-usage';
import { Leases } from './leases/leases';
import { levelHolders } from './leases/lease-holder';
import { resolveLeases } from './leases/lease-options';
import { DEFAULT_MAX_COOLDOWN } from '../runtime/upstream-numbers';
import { DEFAULT_SKEW, readSyncReply, SYNC_SCRIPT, syncCommand } from './redis/sync-script';
import type { SharedValues, StateContext, StateStore, StateStoreHealth } from './state-store';
import { sharedValuesOf } from './redis/shared-values';
import { SharedTenantCounts, type SharedTenantContext } from './redis/tenant-script';
import type { TenantCounts } from './tenant-counts';

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
 * - Admission (`leases`): each limit's room is lent out in shares taken atomically, which the
 *   replicas together never spend beyond; see `Leases`.
 * - Cooldowns: a mark-down is published with its expiry at once; others apply it on their next
 *   sync. A mark-up clears it everywhere.
 * - Sessions: assignments are written with a sliding TTL; a session new to an instance is looked
 *   up before selection (a Redis call a request may wait for, bounded by `timeout`).
 * - Stored responses (Responses API): the deployment that created each one is written at once
 *   with a `responseTtl`; a `previous_response_id` or `retrieve(id)` that an instance does not
 *   know is looked up (the other call a request may wait for, bounded by `timeout` too).
 *
 * Everything read back is untrusted (anyone with write access may have written under the prefix):
 * it is checked before use (`checkPeers`), a bad value is skipped with one log line, and
 * {@link StateStore.sync} returns it as data that the switchboard folds into its models.
 * Without `prefix`, replicas of one configuration share and other applications do not.
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
/** Most instances whose usage one sync reads. */
const MAX_INSTANCES = 1024;

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
  /** Session and stored-response keys. */
  private readonly pointers: PointerKeys;
  /** Warnings about what another writer left. */
  private readonly problems: ProblemLog;
  private readonly scrub: (text: string) => string;
  private unsubscribe: (() => void) | undefined;
  private syncTimer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;
  private flushQueued = false;
  private attached = false;
  private closed = false;
  private readonly outage: Outage;
  private lastSync = 0;
  private readonly listeners: Record<'error' | 'ready' | 'close', (...args: unknown[]) => void>;
  private readonly leases: Leases | undefined;
  /** What the parts that talk to Redis on their own borrow from the store. */
  private readonly host: SharedTenantContext & { prefix: () => string };

  constructor(
    private readonly options: ResolvedRedisOptions,
    private readonly connect: () => RedisClientLike,
    private readonly ownsClient: boolean,
  ) {
    this.prefix = options.prefix;
    this.scrub = secretScrubber(options.url);
    this.outage = new Outage({
      warn: (line) => this.logger?.warn(line),
      log: (line) => this.logger?.log(line),
      scrub: this.scrub,
      closed: () => this.closed,
    });
    this.problems = new ProblemLog(
      (line) => this.logger?.warn(this.scrub(line)),
      () => this.prefix,
    );
    this.host = {
      ready: () => this.ready(),
      degrade: (error: unknown) => this.outage.degrade(error),
      skipped: (what: string) => this.problems.key(what),
      prefix: () => this.prefix!,
      timeout: options.timeout,
    };
    const { sessionTtl, responseTtl } = options;
    this.pointers = new PointerKeys({ ...this.host, sessionTtl, responseTtl });
    const leases = resolveLeases(options.leases, options.replicas);
    this.leases = leases && new Leases(leases, { ...this.host, id: this.id });
    this.listeners = {
      error: (error) => this.outage.degrade(error),
      close: () => this.outage.degrade(CLOSED),
      ready: () => {
        this.leases?.warm();
        this.tick();
      },
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
    this.pointers.knowAtLeast(registry.sessions.capacity);
    const { fields, holders } = entriesOf(registry, this.entries, this.bounds);
    this.prefix ??= defaultPrefix(
      [...registry.deployments.values()].map((d) => {
        const { baseURL } = (d.client ?? {}) as { baseURL?: unknown };
        const endpoint = typeof baseURL === 'string' ? baseURL : '';
        return { name: d.name, endpoint, models: d.models.keys() };
      }),
    );
    this.unsubscribe = registry.onModelEvent((state, event) => {
      if (event.type === 'down' || event.type === 'up') this.onCooldown(fields.get(state), event);
    });

    const client = this.connect();
    this.client = client;
    client.on('error', this.listeners.error);
    client.on('close', this.listeners.close);
    client.on('ready', this.listeners.ready);
    this.leases?.attach([...holders, ...levelHolders(registry)], context);
    this.syncTimer = setInterval(() => this.tick(), this.options.syncInterval);
    this.syncTimer.unref();
    if (client.status === 'ready') this.listeners.ready();
  }

  sync(): Promise<PeerReport> {
    const client = this.client;
    if (this.closed || client === undefined || client.status !== 'ready') {
      return Promise.resolve(emptyPeerReport(this.clock()));
    }
    return this.syncWith(client).then(
      (report) => {
        this.outage.recover();
        return report;
      },
      (error: unknown) => {
        this.outage.degrade(error);
        return emptyPeerReport(this.clock());
      },
    );
  }

  get admissionWait(): number | undefined {
    // A lease's round trip, and the turns of the calls ahead of it for the same model.
    return this.leases === undefined ? undefined : Math.max(1_000, 4 * this.options.timeout);
  }

  lookupSession(sessionId: string): Promise<string | undefined> {
    return this.pointers.lookupSession(sessionId);
  }

  rememberSession(sessionId: string, deployment: string): void {
    this.pointers.rememberSession(sessionId, deployment);
  }

  lookupResponse(responseId: string): Promise<string | undefined> {
    return this.pointers.lookupResponse(responseId);
  }

  rememberResponse(responseId: string, deployment: string): void {
    this.pointers.rememberResponse(responseId, deployment);
  }

  tenantCounts(): TenantCounts {
    return new SharedTenantCounts(this.host);
  }

  sharedValues(): SharedValues {
    return sharedValuesOf(this.host);
  }

  health(): StateStoreHealth {
    const health: StateStoreHealth = {
      status: this.outage.problem === undefined ? 'up' : 'degraded',
      store: 'redis',
      prefix: this.prefix,
      connection: this.client?.status ?? 'not started',
    };
    if (this.lastSync !== 0) health.lastSync = new Date(this.lastSync).toISOString();
    if (this.outage.problem !== undefined) health.error = this.outage.problem;
    if (this.leases !== undefined) health.leases = this.leases.health();
    return health;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.syncTimer);
    this.unsubscribe?.();
    const client = this.client;
    if (client === undefined) return;
    await this.syncing;
    this.leases?.close();
    // Leave the others this instance's last usage and cooldowns (and read theirs a last time).
    if (client.status === 'ready' && this.outage.problem === undefined) {
      await this.syncWith(client).then(
        (report) => this.deliver(report),
        () => undefined,
      );
    }
    client.off('error', this.listeners.error);
    client.off('close', this.listeners.close);
    client.off('ready', this.listeners.ready);
    if (this.ownsClient) await closeClient(client, this.options.timeout);
  }

  /** The client while the store is reachable, not degraded and not closed. */
  private ready(): RedisClientLike | undefined {
    const client = this.client;
    return client?.status === 'ready' && this.outage.problem === undefined && !this.closed
      ? client
      : undefined;
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
    if (this.syncing !== undefined || this.client.status !== 'ready') return;
    this.syncing = this.syncWith(this.client)
      .then(
        (report) => {
          this.outage.recover();
          this.deliver(report);
        },
        (error: unknown) => this.outage.degrade(error),
      )
      .finally(() => {
        this.syncing = undefined;
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
    const pointers = usage ? this.pointers.take() : { sessions: [], responses: [] };
    // Usage keys outlive a window a little, so that a replica a bit behind still finds them.
    const usageTtl = this.windowMs > 0 ? 2 * this.windowMs : UNWINDOWED_TTL;
    const models = this.entries.length;
    const { keys, args } = syncCommand(this.prefix!, {
      id: this.id,
      now,
      cooldowns,
      usage: usage ? ownUsage(this.entries, now) : undefined,
      usageTtl,
      staleBefore: now - usageTtl,
      sessions: pointers.sessions,
      sessionTtl: this.options.sessionTtl,
      responses: pointers.responses,
      responseTtl: this.options.responseTtl,
      skew: DEFAULT_SKEW,
      maxCooldown: this.maxCooldown,
      maxUsageFields: MAX_INSTANCES,
      maxCooldownFields: Math.max(1024, 2 * models),
      maxValueLength: 65_536 + 4096 * models,
    });

    let reply: unknown;
    try {
      reply = await bounded(
        client.eval(SYNC_SCRIPT, keys.length, ...keys, ...args),
        'sync',
        this.options.timeout,
      );
    } catch (error) {
      // Nothing is lost: what was not acknowledged goes out with the next sync (a newer value wins).
      for (const [field, until] of cooldowns) {
        if (!this.cooldownOps.has(field)) this.cooldownOps.set(field, until);
      }
      this.pointers.giveBack(pointers);
      throw error;
    }
    const { report, problems } = checkPeers(readSyncReply(reply), this.limits(), usage);
    this.problems.sync(problems, usage);
    if (usage) this.lastSync = this.clock();
    return report;
  }

  /** The bounds of this sync's checks: the limits each model knows now. */
  private limits(): PeerBounds {
    return {
      now: this.clock(),
      windowMs: this.windowMs,
      skewMs: DEFAULT_SKEW,
      maxCooldown: this.maxCooldown,
      models: knownLimits(this.entries, this.bounds),
    };
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
        (report) => this.deliver(report),
        (error: unknown) => this.outage.degrade(error),
      );
    });
  }

  /** Hands a report to whoever folds it; what goes wrong there is logged, never thrown back. */
  private deliver(report: PeerReport): void {
    try {
      this.onReport?.(report);
    } catch (error) {
      this.logger?.error(
        `Applying what the other instances reported failed: ${describeFailure(error)}`,
      );
    }
  }
}

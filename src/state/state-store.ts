import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { TenantCounts } from './tenant-counts';
import type { SwitchboardLogger } from '../types';
import { emptyPeerReport, type PeerReport } from './peer-report';

/**
 * How a state store is doing, for health checks.
 *
 * @example
 * ```ts
 * const health: StateStoreHealth = { status: 'degraded', store: 'redis', error: 'connect ECONNREFUSED' };
 * ```
 */
export interface StateStoreHealth {
  /** `degraded`: the store cannot share state right now; the switchboard carries on locally. */
  status: 'up' | 'degraded';
  /** Free-form details, never secrets. */
  [key: string]: unknown;
}

/**
 * What a switchboard tells its state store when it starts.
 *
 * @example
 * ```ts
 * store.attach(registry, {
 *   logger: new Logger('Switchboard'),
 *   ratelimitWindow: 60_000,
 *   clock: Date.now,
 *   onReport: peerFold(registry),
 * });
 * ```
 */
export interface StateContext {
  logger: SwitchboardLogger;
  /** The switchboard's `ratelimitWindow` in ms; 0 = usage is never reset. */
  ratelimitWindow: number;
  /** The switchboard's clock (epoch ms). */
  clock: () => number;
  /** The longest cooldown (ms) a store publishes or reads; default one day. */
  maxCooldown?: number;
  /**
   * Told what each sync the store runs by itself brought back (see {@link StateStore.sync});
   * the switchboard folds it into its models (`peerFold`).
   */
  onReport?: (report: PeerReport) => void;
}

/**
 * Where usage, cooldowns and sessions live beyond one switchboard instance. The call path never
 * waits for a store, except {@link lookupSession} on a session the local map does not know (and
 * {@link lookupResponse} on a response id it does not know).
 *
 * @example
 * ```ts
 * createSwitchboard({ deployments, state: memoryState() });
 * createSwitchboard({ deployments, state: redisState({ url: process.env.REDIS_URL }) });
 * ```
 */
export interface StateStore {
  /**
   * Bind to a switchboard's registry and start syncing. Called once, when the switchboard starts;
   * a store serves one switchboard.
   */
  attach(registry: DeploymentRegistry, context: StateContext): void;
  /**
   * One round trip: publish this instance's usage, cooldowns and sessions, and return what the
   * other instances reported (their usage per model, their newest rate-limit readings, the
   * cooldowns in force), checked at the store's boundary. It writes into no model: the caller
   * decides what to do with it (`peerFold`). A store that shares state runs it on its own
   * schedule too and hands each report to {@link StateContext.onReport}; when the store cannot
   * be reached, the report says nothing (`usage` and `cooldowns` false).
   */
  sync?(): Promise<PeerReport>;
  /**
   * True when the store resets usage itself; the switchboard then neither slides its window nor
   * runs a reset timer. The built-in stores leave usage to the switchboard (`redisState` shares a
   * sliding view of the others' usage instead).
   */
  readonly resetsUsage?: boolean;
  /**
   * ms a call may wait for room the store is bringing (a lease), when the switchboard has no
   * `queue`: it then queues calls that long at most. Absent: no wait without a `queue`.
   */
  readonly admissionWait?: number;
  /** Find the deployment name of a session that this instance has not seen. */
  lookupSession?(sessionId: string): Promise<string | undefined>;
  /** Publish a session's deployment; called on every call with a session, so it must be cheap. */
  rememberSession?(sessionId: string, deployment: string): void;
  /** Find the deployment that created a stored response this instance has not seen. */
  lookupResponse?(responseId: string): Promise<string | undefined>;
  /**
   * Publish which deployment created a stored response (Responses API), so that calls chained on
   * it from any instance reach it; called once per stored response, so it must be cheap.
   */
  rememberResponse?(responseId: string, deployment: string): void;
  /**
   * Where tenants' counts live when the store shares them ({@link TenantCounts}): each call of a
   * tenant with limits then waits for one atomic round trip at admission, so that replicas never
   * let a tenant through past its limits together. Absent: counted in this process.
   */
  tenantCounts?(): TenantCounts;
  /**
   * Plain values other features keep in the shared store (the response cache's entries), under
   * the store's prefix. Absent: nothing is shared.
   */
  sharedValues?(): SharedValues;
  /** Current health of the store. */
  health(): StateStoreHealth;
  /** Stop syncing and release connections; idempotent. */
  close(): Promise<void>;
}

/**
 * Values kept in a shared store under its prefix, each with an expiry. Reads and writes never
 * fail a call: while the store cannot be reached a read finds nothing and a write is dropped.
 * What a read returns was written by anyone with access to the store: check it before use.
 *
 * @example
 * ```ts
 * const values = store.sharedValues?.();
 * values?.set('cache:9f2c…', text, 60_000);
 * const text = await values?.get('cache:9f2c…'); // undefined when absent or unreachable
 * ```
 */
export interface SharedValues {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string, ttlMs: number): void;
  /** A value another writer left was refused (`what` says which and why): logged once. */
  skipped(what: string): void;
}

/**
 * The default store: everything in this process, no coordination.
 *
 * @example
 * ```ts
 * createSwitchboard({ deployments, state: memoryState() });
 * ```
 */
export function memoryState(): StateStore {
  return {
    attach: () => undefined,
    sync: () => Promise.resolve(emptyPeerReport(Date.now())),
    health: () => ({ status: 'up', store: 'memory' }),
    close: () => Promise.resolve(),
  };
}

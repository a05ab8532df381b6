import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { SwitchboardLogger } from '../config/switchboard-options';

/** How a state store is doing, for health checks. */
export interface StateStoreHealth {
  status: 'up' | 'degraded';
  /** Free-form details, never secrets. */
  [key: string]: unknown;
}

/**
 * Where usage, cooldowns and sessions live beyond one switchboard instance. The call path never
 * waits for a store, except {@link lookupSession} on a session the local map does not know.
 *
 * @example
 * ```ts
 * createSwitchboard({ deployments, state: memoryState() });
 * ```
 */
export interface StateStore {
  /** Bind to a switchboard's registry and start syncing. Called once, when the switchboard starts. */
  attach(registry: DeploymentRegistry, logger: SwitchboardLogger): void;
  /** Find the deployment name of a session that this instance has not seen. */
  lookupSession?(sessionId: string): Promise<string | undefined>;
  /** Publish a session's deployment. */
  rememberSession?(sessionId: string, deployment: string): void;
  /** Current health of the store. */
  health(): StateStoreHealth;
  /** Stop syncing and release connections; idempotent. */
  close(): Promise<void>;
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
    health: () => ({ status: 'up', store: 'memory' }),
    close: () => Promise.resolve(),
  };
}

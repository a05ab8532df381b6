import type { ApiAdapter } from '../providers/adapter';
import type { ResponseTracker } from '../providers/attempt-types';
import type { Deployment } from '../registry/deployment';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import { SessionAffinity } from '../selection/session-affinity';
import type { StateStore } from '../state/state-store';

/**
 * Before a call with a session this instance does not know is routed: the session's deployment
 * from the shared state store, if it has one (another instance served the session). `undefined`
 * when there is nothing to wait for; a store that fails is as one that does not know.
 *
 * @example
 * ```ts
 * const pending = sessionFromStore(registry, state, 'user-42');
 * if (pending) await pending;
 * ```
 */
export function sessionFromStore(
  registry: DeploymentRegistry,
  state: StateStore,
  sessionId: string | undefined,
): Promise<void> | undefined {
  const lookup = state.lookupSession;
  if (sessionId === undefined || !lookup || registry.sessions.get(sessionId) !== undefined) {
    return undefined;
  }
  return lookup.call(state, sessionId).then(
    (name) => {
      if (name !== undefined && registry.deployments.has(name)) {
        registry.sessions.set(sessionId, name);
      }
    },
    () => undefined,
  );
}

/**
 * Stored response id -> the deployment that created it, here and (when the state store keeps
 * them) for every instance: a chained call (`previous_response_id`) or a retrieval goes there.
 *
 * @example
 * ```ts
 * const chains = new ResponseChains(10_000, registry, state);
 * chains.seen({ id: 'resp_1' }, body, deployment, responses);
 * await chains.holder('resp_1'); // 'east'
 * ```
 */
export class ResponseChains implements ResponseTracker {
  private readonly known: SessionAffinity;

  constructor(
    maxResponses: number,
    private readonly registry: DeploymentRegistry,
    private readonly state: StateStore,
  ) {
    this.known = new SessionAffinity(maxResponses);
  }

  /** An answer or stream event of a call that succeeded: remember what it created, if anything. */
  seen(
    value: unknown,
    body: Record<string, unknown>,
    deployment: Deployment,
    adapter: ApiAdapter,
  ): void {
    const id = adapter.chain?.created(value, body);
    if (id === undefined) return;
    this.known.set(id, deployment.name);
    this.state.rememberResponse?.(id, deployment.name);
  }

  /**
   * The name of the deployment holding `id`: known here, else asked of the state store (a
   * promise), else `undefined`.
   */
  holder(id: string): string | undefined | Promise<string | undefined> {
    const known = this.known.get(id);
    const lookup = this.state.lookupResponse;
    if (known !== undefined || !lookup) return known;
    return lookup.call(this.state, id).then(
      (name) => {
        if (name !== undefined && this.registry.deployments.has(name)) this.known.set(id, name);
        return name;
      },
      () => undefined,
    );
  }
}

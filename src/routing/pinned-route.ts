import { clip } from '../errors/clip';
import type { PreparedRequest } from '../providers/attempt-types';
import { SwitchboardError } from '../switchboard.error';
import type { DispatchShared, Pin } from './dispatch-call';
import type { NoRoom, Route } from './route-call';

/**
 * What routing a pinned call reads of it (its dispatch).
 *
 * @example
 * ```ts
 * const call: PinnedQuery = { shared, model: 'gpt-4o', request, sessionId: undefined };
 * ```
 */
interface PinnedQuery {
  readonly shared: Pick<DispatchShared, 'queue' | 'registry'>;
  readonly model: string;
  readonly request: PreparedRequest;
  readonly sessionId: string | undefined;
}

/**
 * The pinned deployment, when it has room for the call; with a queue, when it is only out of
 * quota room (a window to end, a replica's lease on its way), how long until it has some: the
 * call waits for this deployment. Otherwise a {@link SwitchboardError} says why it cannot go.
 *
 * @example
 * ```ts
 * const routed = pinnedRoute(dispatch, pin); // { deployment, model } or { waitMs }
 * ```
 */
export function pinnedRoute(call: PinnedQuery, pin: Pin): Route | NoRoom {
  const { deployment: d, modelState: state, model, id } = pin;
  const { shared, request } = call;
  const calls = state.inFlight;
  if (model !== undefined && (!state.hasRoom(request.admission) || !calls.hasRoom())) {
    const wait = state.roomAt(request.admission);
    if (shared.queue !== undefined && calls.hasRoom() && !state.isCooling() && wait < Infinity) {
      return { waitMs: wait };
    }
    const why = state.isCooling()
      ? `is cooling down for ${Math.ceil(state.cooldownRemaining / 1000)} s`
      : calls.hasRoom()
        ? 'is at its quota'
        : `has ${calls.count} calls in flight (maxInFlight ${calls.cap})`;
    throw new SwitchboardError(
      `${clip(id)} lives on deployment ${d.name}, which ${why} for ${model}: retry later, or start without previous_response_id`,
    );
  }
  if (call.sessionId !== undefined) shared.registry.sessions.set(call.sessionId, d.name);
  return { deployment: d, model: call.model };
}

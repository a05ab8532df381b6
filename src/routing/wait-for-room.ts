import type { DeploymentExplanation } from '../errors/explanation';
import type { PreparedRequest } from '../providers/attempt-types';
import { tokensOf, type Admission } from '../quota/admission';
import { noRoomError } from '../quota/no-room';
import type { Deployment, ProviderErrors, SdkRequestOptions } from '../registry/deployment';
import type { CapacityQueue } from '../scheduling/capacity-queue';
import type { CallTags, LaneActivity } from '../scheduling/lanes';
import { hasRoom } from '../selection/pick';
import type { SwitchboardMetrics } from '../telemetry/switchboard-metrics';
import type { NoRoom, Route } from './route-call';

/**
 * A call no deployment has room for, as its wait reads it (its dispatch).
 *
 * @example
 * ```ts
 * await waitForRoom(dispatch, { waitMs: 250 }, false);
 * ```
 */
interface WaitingCall {
  readonly shared: {
    readonly queue: CapacityQueue | undefined;
    readonly lanes: LaneActivity;
    readonly metrics: SwitchboardMetrics;
  };
  readonly model: string;
  readonly errors: ProviderErrors;
  readonly tags: CallTags;
  readonly request: PreparedRequest;
  /** Its charge as routing asks for room (a batch call's keeps the interactive headroom). */
  readonly admission: Admission | undefined;
  readonly options: SdkRequestOptions | undefined;
  readonly pool: readonly Deployment[];
  /** Routes it again. */
  route(): Route | NoRoom;
  /** Why each deployment did not take it. */
  explain(): DeploymentExplanation[];
}

/**
 * No deployment has room for `call` (`queued`: others of its lane already wait, so none was
 * tried): a place in the queue (when configured and not full), woken when room is expected or
 * freed, or else the SDK's `RateLimitError` at once, with `retry-after` set to when room is
 * expected. A batch call held to the headroom is tried again when interactive traffic ends, at
 * latest.
 *
 * @example
 * ```ts
 * waitForRoom(dispatch, routed, routed === QUEUED).then((to) => send(to));
 * ```
 */
export function waitForRoom(call: WaitingCall, routed: NoRoom, queued: boolean): Promise<Route> {
  const { queue, lanes } = call.shared;
  const { model, errors, tags } = call;
  const admission = call.request.admission;
  const metrics = call.shared.metrics.lanes;
  let held = false;
  const holds = () => {
    // Counted once per call, the first time the headroom alone keeps it back.
    if (held || !heldForHeadroom(call)) return;
    held = true;
    metrics?.heldBack(model, tags);
  };
  const route = (): Route | NoRoom => {
    const r = call.route();
    if (!('waitMs' in r) || call.admission?.reserve === undefined) return r;
    holds();
    const quiet = lanes.presentFor(model);
    return quiet > 0 && quiet < r.waitMs ? { waitMs: quiet } : r;
  };
  const expected = () => {
    const r = route();
    return 'waitMs' in r ? r.waitMs : 0;
  };
  try {
    if (!queued && call.admission?.reserve !== undefined) holds();
    if (
      queue === undefined ||
      !queue.canJoin(model, tags.lane) ||
      queue.maxWaitOf(tags.lane) <= 0
    ) {
      const wait = queued ? expected() : routed.waitMs;
      return Promise.reject(
        noRoomError(errors.RateLimitError, model, admission, wait, {
          explanations: call.explain(),
        }),
      );
    }
    metrics?.queued(model, tags);
    return queue.wait(
      model,
      () => {
        const r = route();
        return 'waitMs' in r ? r : { target: r };
      },
      {
        signal: call.options?.signal,
        tags,
        cost: tokensOf(admission),
        onAdmit: metrics && ((ms) => metrics.waited(model, tags, ms)),
        onAbort: () => new errors.APIUserAbortError(),
        onTimeout: (waited) =>
          noRoomError(errors.RateLimitError, model, admission, expected(), {
            waited,
            explanations: call.explain(),
          }),
      },
    );
  } catch (error) {
    return Promise.reject(error);
  }
}

/** A batch call held to the headroom that a deployment of its model has room for without it. */
function heldForHeadroom(call: WaitingCall): boolean {
  if (call.admission?.reserve === undefined) return false;
  const whole = call.request.admission;
  return call.pool.some((d) => hasRoom(d.models.get(call.model)!, whole));
}

import type { Refusal } from '../failover/refusals';
import type { ApiAdapter, ApiOperation } from '../providers/adapter';
import { runAttempt } from '../providers/attempt';
import type {
  AttemptCall,
  AttemptHooks,
  AttemptOutcome,
  PreparedRequest,
} from '../providers/attempt-types';
import type { ModelState } from '../registry/model-state';
import type { SdkRequestOptions } from '../registry/deployment';
import type { CallTags } from '../scheduling/lanes';
import { SwitchboardError } from '../switchboard.error';
import type { AttemptContext } from '../telemetry/gen-ai-telemetry';
import { crossVendor } from '../translate/cross-vendor';
import { FallbackHooks } from './attempt-hooks';
import { maxOutputOf } from '../translate/max-output';
import type { DispatchShared, Pin } from './dispatch-call';
import type { Route } from './route-call';

/**
 * What sending one attempt reads of its call (its dispatch), and the route it records as the
 * call's last.
 *
 * @example
 * ```ts
 * sendAttempt(dispatch, { deployment, model: 'gpt-4o' }, dispatch, now);
 * ```
 */
export interface SendingCall {
  readonly shared: DispatchShared;
  readonly model: string;
  readonly request: PreparedRequest;
  readonly adapter: ApiAdapter;
  readonly op: ApiOperation;
  readonly options: SdkRequestOptions | undefined;
  readonly sessionId: string | undefined;
  readonly tags: CallTags;
  readonly pin: Pin | undefined;
  /** Why the call left its requested model, if it did. */
  readonly refusal: Refusal | undefined;
  readonly context: AttemptContext;
  /** The route of the call's latest attempt. */
  last: Route | undefined;
}

/**
 * One attempt of `call` on a route; a fallback's replaces the params' `model` for this attempt
 * only. `now` is the clock's reading when the route was taken in this same turn. Whatever goes
 * wrong here reaches `outcome` once.
 *
 * @example
 * ```ts
 * sendAttempt(dispatch, route, dispatch, dispatch.now);
 * ```
 */
export function sendAttempt(
  call: SendingCall,
  to: Route,
  outcome: AttemptOutcome,
  now?: number,
): void {
  const { shared, request, model } = call;
  const { deployment } = to;
  try {
    if (call.last === undefined) shared.metrics.lanes?.admitted(model, call.tags);
    call.last = to;
    if (call.tags.lane === 'interactive') shared.lanes.sent(model, now);
    if (call.sessionId !== undefined) {
      shared.state.rememberSession?.(call.sessionId, deployment.name);
    }
    let hooks = shared.hooks;
    let prepared = request;
    if (to.model !== model) {
      const refusal = call.refusal;
      shared.logger.debug?.(
        refusal === undefined
          ? `No deployment of ${model} can take the call: falling back to ${to.model} on ${deployment.name}`
          : `${model} cannot take the call (${refusal}): falling back to ${to.model} on ${deployment.name}`,
      );
      hooks = new FallbackHooks(hooks, shared.metrics, {
        model,
        reason: refusal ?? 'unavailable',
        translated: deployment.provider !== call.adapter.provider,
      });
      prepared = { ...request, body: { ...request.body, model: to.model } };
    }
    const state = call.pin?.modelState ?? deployment.models.get(to.model)!;
    if (deployment.provider !== call.adapter.provider) {
      sendTranslated(call, { to, state, hooks }, outcome);
      return;
    }
    // The call is its attempt's own; a fallback's body names another model.
    const sent: AttemptCall =
      prepared === request
        ? call
        : {
            adapter: call.adapter,
            op: call.op,
            request: prepared,
            options: call.options,
            context: call.context,
          };
    runAttempt(sent, deployment, state, hooks, outcome);
  } catch (error) {
    // Nothing above calls `outcome` and then throws: it hears of this once.
    outcome.reject(error as Error);
  }
}

/**
 * An attempt on a deployment of the other vendor: the call translated into its API, admitted and
 * priced there, its answer translated back (see {@link crossVendor}).
 */
function sendTranslated(
  call: SendingCall,
  at: { to: Route; state: ModelState; hooks: AttemptHooks },
  outcome: AttemptOutcome,
): void {
  const { adapter, op, request } = call;
  const { to, state } = at;
  // An operation the adapter does not list is sb.fetch's relay of a create call.
  const opName =
    Object.keys(adapter.operations).find((k) => adapter.operations[k] === op) ?? 'fetch';
  // A deployment of the caller's own provider: its SDK's stream class and error classes.
  const own = [...call.shared.registry.deployments.values()].find(
    (d) => d.provider === adapter.provider,
  )!;
  const crossing = crossVendor(
    { adapter, opName, op, request, deployment: own },
    {
      deployment: to.deployment,
      model: to.model,
      maxTokens: maxOutputOf(to.model, state.quota.outputReservation),
      clock: call.shared.clock,
    },
    outcome,
  );
  if (crossing === undefined) {
    throw new SwitchboardError(
      `${call.model}'s call cannot be translated for ${to.model}: it was not sent`,
    );
  }
  const { adapter: target, op: targetOp, request: translated, outcome: back } = crossing;
  runAttempt(
    {
      adapter: target,
      op: targetOp,
      request: translated,
      options: call.options,
      context: call.context,
    },
    to.deployment,
    state,
    at.hooks,
    back,
  );
}

import type { ApiAdapter, ApiOperation } from '../providers/adapter';
import type { PreparedRequest } from '../providers/attempt-types';
import type { Answer, Deployment, SdkRequestOptions } from '../registry/deployment';
import { ModelState } from '../registry/model-state';
import { clip } from '../errors/clip';
import type { TagSet } from '../placement/tags';
import { SwitchboardError } from '../switchboard.error';
import { Dispatch } from './dispatch';
import type { DispatchShared, Pin } from './dispatch-call';
import type { ResponseChains } from './store-lookups';

/**
 * A call to the deployment holding the stored object `id`, and what binds it.
 *
 * @example
 * ```ts
 * const call: PinnedCall = { id: 'resp_1', request, options: undefined, model: 'gpt-4o', required: eu };
 * ```
 */
interface PinnedCall {
  readonly adapter: ApiAdapter;
  readonly op: ApiOperation;
  readonly id: string;
  readonly request: PreparedRequest;
  readonly options: SdkRequestOptions | undefined;
  /** The call's model; `undefined` for a retrieval. */
  readonly model?: string;
  readonly sessionId?: string;
  /** The tags a deployment must carry to take the call. */
  readonly required?: TagSet;
}

/**
 * Calls that build on (or read) a stored object: each goes to the deployment that created it, or
 * fails with a {@link SwitchboardError} naming the id before anything is sent (no deployment is
 * known to hold it, the holder does not serve the call's model, or it lacks a tag the call
 * requires: a chain is bound by where its call may go).
 *
 * @example
 * ```ts
 * const pins = new PinnedCalls(shared, chains);
 * await pins.dispatch({ adapter, op, id: 'resp_1', request, options: undefined, model: 'gpt-4o' });
 * ```
 */
export class PinnedCalls {
  /** Per deployment, the state that calls without a model (retrievals) report to. */
  private readonly unmetered = new Map<Deployment, ModelState>();

  constructor(
    private readonly shared: DispatchShared,
    private readonly chains: ResponseChains,
  ) {}

  /** Dispatches `call` to the holder of its id, once the stores said which deployment that is. */
  dispatch(call: PinnedCall): Promise<Answer> {
    const holder = this.chains.holder(call.id);
    if (typeof holder !== 'object') return this.send(call, holder);
    return holder.then((name) => this.send(call, name));
  }

  private send(call: PinnedCall, holder: string | undefined): Promise<Answer> {
    try {
      const pin = this.pinFor(call, holder);
      return new Dispatch(this.shared, {
        adapter: call.adapter,
        op: call.op,
        request: call.request,
        options: call.options,
        sessionId: call.sessionId,
        pool: [pin.deployment],
        pin,
      }).run();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private pinFor(call: PinnedCall, holder: string | undefined): Pin {
    const { id, model, required } = call;
    const registry = this.shared.registry;
    let d = holder === undefined ? undefined : registry.deployments.get(holder);
    if (d === undefined) {
      // Where only one deployment could have created it, that one holds it.
      const provider = call.adapter.provider;
      const candidates =
        model !== undefined
          ? registry.poolFor(model)
          : [...registry.deployments.values()].filter((x) => x.provider === provider);
      if (candidates.length !== 1) {
        throw new SwitchboardError(
          `No deployment is known to hold ${clip(id)}: it was not created through this switchboard, or it ` +
            `has been forgotten (maxResponses, or the state store's responseTtl). It is not sent to another deployment, which would answer 404.`,
        );
      }
      d = candidates[0]!;
    }
    // Where a call may go binds the chain it continues: its prompt and the stored context would
    // both reach a deployment the call's tags rule out.
    const missing = required?.tags.filter((tag) => !d.tags.includes(tag)) ?? [];
    if (missing.length > 0) {
      throw new SwitchboardError(
        `${clip(id)} lives on deployment ${d.name}, which lacks the tag${missing.length > 1 ? 's' : ''} ${missing.join(', ')} the call requires: it is not sent there. Start without previous_response_id on a deployment carrying ${required!.tags.join(', ')}.`,
        { code: 'invalid_request' },
      );
    }
    if (model === undefined) {
      return { id, deployment: d, modelState: this.unmeteredState(d), model };
    }
    const state = d.models.get(model);
    if (state === undefined) {
      throw new SwitchboardError(
        `${clip(id)} lives on deployment ${d.name}, which does not serve ${model}: use a model that ${d.name} serves, or start without previous_response_id`,
      );
    }
    return { id, deployment: d, modelState: state, model };
  }

  private unmeteredState(d: Deployment): ModelState {
    let state = this.unmetered.get(d);
    if (state === undefined) {
      // Not in the deployment's models: what happens to it changes no model's health.
      state = new ModelState({ name: '(unmetered)' }, d.name, this.shared.clock);
      this.unmetered.set(d, state);
    }
    return state;
  }
}

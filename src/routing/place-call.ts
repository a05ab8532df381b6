import type { PreparedRequest } from '../providers/attempt-types';
import type { Answer, SdkRequestOptions } from '../registry/deployment';
import type { Tenants } from '../tenants/tenants';
import type { CallAccount } from '../tenants/call-account';
import { translatableFallbacks, type SkippedFallback } from '../translate/fallback-choice';
import type { CallRecord } from './call-record';
import { widerModels } from './context-windows';
import { Dispatch } from './dispatch';
import type { DispatchShared } from './dispatch-call';
import type { PinnedCalls } from './pins';
import { sessionFromStore } from './store-lookups';

/**
 * What placing a call reads of its switchboard's router, beside what every dispatch shares.
 *
 * @example
 * ```ts
 * placeCall(router, call, request, options, prefix);
 * ```
 */
export interface PlacingRouter extends DispatchShared {
  /** Per model with fallbacks, every model its calls may fall back to, in order. */
  readonly fallbacks: ReadonlyMap<string, readonly string[]>;
  /** Per model, the models tried when Azure's content filter refuses it. */
  readonly contentFilterFallbacks: ReadonlyMap<string, readonly string[]>;
  readonly tenants: Tenants | undefined;
  /** Models served by a provisioned (PTU) deployment somewhere. */
  readonly provisioned: ReadonlySet<string>;
  /** Calls that build on a stored object, each sent to its holder alone. */
  readonly pins: PinnedCalls;
}

/**
 * Whether a call goes straight to one {@link Dispatch}: no tenant limits to take a charge for, no
 * fallbacks, no context windows to mind, no stored object to follow (most calls). Any other goes
 * through {@link placeCall}.
 *
 * @example
 * ```ts
 * if (goesStraight(router, call, request)) return new Dispatch(router, { ... }).run();
 * ```
 */
export function goesStraight(
  router: PlacingRouter,
  call: CallRecord,
  request: PreparedRequest,
): boolean {
  const model = call.model;
  return (
    (request.account as CallAccount | undefined)?.tenantKey === undefined &&
    call.chained === undefined &&
    router.windows === undefined &&
    !(call.fallbacks && (router.fallbacks.has(model) || router.contentFilterFallbacks.has(model)))
  );
}

/**
 * The last stages of a call whose request is prepared and priced: its tenant's charge taken (for
 * the dearest model it may go to), then one {@link Dispatch} (or, for a call building on a stored
 * object, its holder alone). `prefix` is its cacheable prompt prefix, the key it sticks by when it
 * has no session.
 *
 * @example
 * ```ts
 * return placeCall(router, call, request, options as SdkRequestOptions, prefix);
 * ```
 */
export function placeCall(
  router: PlacingRouter,
  call: CallRecord,
  request: PreparedRequest,
  options: SdkRequestOptions | undefined,
  prefix: string | undefined,
): Promise<Answer> {
  const { entry, model, sessionId, required } = call;
  const { adapter, op } = entry;
  const account = request.account as CallAccount | undefined;
  const pinned = (held: PreparedRequest) =>
    router.pins.dispatch({
      adapter,
      op,
      id: call.chained!,
      request: held,
      options,
      model,
      sessionId,
      required,
    });
  if (call.chained !== undefined && account?.tenantKey === undefined) return pinned(request);
  let fallbacks =
    router.fallbacks.size > 0 && call.fallbacks ? router.fallbacks.get(model) : undefined;
  // Fallbacks of the other vendor that this call cannot be translated for are skipped.
  const translatable = (list: readonly string[]) =>
    translatableFallbacks(adapter, entry.opName, call.body, list, router.registry.models);
  let skipped: SkippedFallback[] | undefined;
  if (fallbacks !== undefined) ({ fallbacks, skipped } = translatable(fallbacks));
  const filterFallbacksOf = (target: string): readonly string[] | undefined => {
    const list =
      router.contentFilterFallbacks.size > 0 && call.fallbacks
        ? router.contentFilterFallbacks.get(target)
        : undefined;
    return list && translatable(list).fallbacks;
  };
  const wider = widerModels(router.windows, model, request, fallbacks);
  // Without a session, a cacheable prompt prefix is one: it keeps to where it is cached. Not
  // where a provisioned deployment serves the model: it is paid for whether used or not, so its
  // room goes first, before a prefix cached on a tier below it.
  const sticky = sessionId ?? (router.provisioned.has(model) ? undefined : prefix);
  const pending = sessionFromStore(router.registry, router.state, sticky);
  const dispatch = (target: string, rest: readonly string[] | undefined) => {
    const own = target === model;
    const run = new Dispatch(router, {
      adapter,
      op,
      request: own ? request : { ...request, body: { ...request.body, model: target } },
      options,
      sessionId: own ? sticky : sessionId,
      pool: router.registry.poolFor(target, required),
      fallbacks: rest,
      tags: call.tags,
      required,
      filterFallbacks: filterFallbacksOf(target),
      skipped,
    });
    if (wider !== undefined && own) run.leaveModel('context_window', wider);
    return pending === undefined ? run.run() : pending.then(() => run.run());
  };
  if (account?.tenantKey === undefined) return dispatch(model, fallbacks);
  // A tenant with limits: its charge is taken first, for the call's model or, over the
  // budget, the first fallback whose price fits; what the call does not use goes back.
  const models = fallbacks === undefined ? [model] : [model, ...fallbacks];
  const RateLimitError = router.registry.poolFor(model)[0]!.errors.RateLimitError;
  return router
    .tenants!.admit(account, request.admission, models, RateLimitError, options?.signal)
    .then((chosen) =>
      call.chained === undefined ? dispatch(chosen.model, chosen.fallbacks) : pinned(request),
    )
    .catch((error: unknown) => {
      account.end(error);
      throw error;
    });
}

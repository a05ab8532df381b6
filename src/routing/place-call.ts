import type { PreparedRequest } from '../providers/attempt-types';
import type { SettledCall } from '../providers/call-promise';
import type { Answer, SdkRequestOptions } from '../registry/deployment';
import type { TenantPlace, Tenants } from '../tenants/tenants';
import type { CallAccount } from '../tenants/call-account';
import { translatableFallbacks, type SkippedFallback } from '../translate/fallback-choice';
import type { CallRecord } from './call-record';
import { widerModels } from './context-windows';
import { Dispatch } from './dispatch';
import type { DispatchShared } from './dispatch-call';
import type { PinnedCalls } from './pins';
import { sessionFromStore } from './store-lookups';
import { keepShape } from '../runtime/kept-shapes';

/**
 * What placing a call reads of its switchboard's router, beside what every dispatch shares.
 *
 * @example
 * ```ts
 * placeCall(router, call, request, { options, prefix, open: undefined });
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
 * return placeCall(router, call, request, { options, prefix, open });
 * ```
 */
export function placeCall(
  router: PlacingRouter,
  call: CallRecord,
  request: PreparedRequest,
  how: PlaceHow,
): Promise<Answer> {
  return new Placement(router, call, request, how).place();
}

/**
 * How a call is placed: its SDK request options, its cacheable prompt prefix (the key it sticks by
 * without a session), and, when the promise returned is the caller's own, how to open it (see
 * `CallEntry.open`).
 */
export interface PlaceHow {
  options: SdkRequestOptions | undefined;
  prefix: string | undefined;
  open: ((call: SettledCall) => Promise<Answer>) | undefined;
}

/**
 * One call being placed by {@link placeCall}: what its stages share, in one object rather than a
 * closure each.
 */
class Placement {
  private readonly account: CallAccount | undefined;
  private fallbacks: readonly string[] | undefined = undefined;
  private skipped: SkippedFallback[] | undefined = undefined;
  private wider: string[] | undefined = undefined;
  private sticky: string | undefined = undefined;
  private pending: Promise<void> | undefined = undefined;
  private readonly options: SdkRequestOptions | undefined;

  constructor(
    private readonly router: PlacingRouter,
    private readonly call: CallRecord,
    private readonly request: PreparedRequest,
    private readonly how: PlaceHow,
  ) {
    this.account = request.account as CallAccount | undefined;
    this.options = how.options;
  }

  place(): Promise<Answer> {
    const { router, call, request, account } = this;
    const model = call.model;
    if (call.chained !== undefined && account?.tenantKey === undefined) return this.pinned();
    const fallbacks =
      router.fallbacks.size > 0 && call.fallbacks ? router.fallbacks.get(model) : undefined;
    if (fallbacks !== undefined) {
      // Fallbacks of the other vendor that this call cannot be translated for are skipped.
      ({ fallbacks: this.fallbacks, skipped: this.skipped } = this.translatable(fallbacks));
    }
    this.wider = widerModels(router.windows, model, request, this.fallbacks);
    // Without a session, a cacheable prompt prefix is one: it keeps to where it is cached. Not
    // where a provisioned deployment serves the model: it is paid for whether used or not, so its
    // room goes first, before a prefix cached on a tier below it.
    this.sticky = call.sessionId ?? (router.provisioned.has(model) ? undefined : this.how.prefix);
    this.pending = sessionFromStore(router.registry, router.state, this.sticky);
    if (account?.tenantKey === undefined)
      return this.dispatch(model, this.fallbacks, this.how.open);
    // A tenant with limits: its charge is taken first, for the call's model or, over the
    // budget, the first fallback whose price fits; what the call does not use goes back.
    const models = this.fallbacks === undefined ? [model] : [model, ...this.fallbacks];
    const RateLimitError = router.registry.poolFor(model)[0]!.errors.RateLimitError;
    let chosen: TenantPlace | Promise<TenantPlace>;
    try {
      chosen = router.tenants!.admit(
        account,
        request.admission,
        models,
        RateLimitError,
        this.options?.signal,
      );
      // Taken at once (the tenant's counts are this process's): dispatched in the same turn, and
      // the dispatch gives back what the account holds if the call fails.
      if (!(chosen instanceof Promise) && call.chained === undefined) {
        return this.dispatch(chosen.model, chosen.fallbacks, this.how.open);
      }
    } catch (error) {
      // Refused, or no dispatch could be made (a pool without the call's tags): nothing was sent.
      account.end(error);
      return Promise.reject(error);
    }
    return Promise.resolve(chosen)
      .then((place) =>
        call.chained === undefined ? this.dispatch(place.model, place.fallbacks) : this.pinned(),
      )
      .catch((error: unknown) => {
        account.end(error);
        throw error;
      });
  }

  /** To the holder of the stored object the call builds on, alone. */
  private pinned(): Promise<Answer> {
    const { call, request, options } = this;
    const { adapter, op } = call.entry;
    const { model, sessionId, required } = call;
    return this.router.pins.dispatch({
      adapter,
      op,
      id: call.chained!,
      request,
      options,
      model,
      sessionId,
      required,
    });
  }

  private translatable(list: readonly string[]) {
    const { adapter, opName } = this.call.entry;
    return translatableFallbacks(
      adapter,
      opName,
      this.call.body,
      list,
      this.router.registry.models,
    );
  }

  private filterFallbacksOf(target: string): readonly string[] | undefined {
    const filters = this.router.contentFilterFallbacks;
    const list = filters.size > 0 && this.call.fallbacks ? filters.get(target) : undefined;
    return list && this.translatable(list).fallbacks;
  }

  /**
   * One dispatch to `target`, the call's model or the fallback its tenant's budget chose; with
   * `open`, in the caller's own promise (only while no promise was handed out for the call yet).
   */
  private dispatch(
    target: string,
    rest: readonly string[] | undefined,
    open?: (call: SettledCall) => Promise<Answer>,
  ): Promise<Answer> {
    const { router, call, request } = this;
    const own = target === call.model;
    const run = new Dispatch(router, {
      adapter: call.entry.adapter,
      op: call.entry.op,
      request: own ? request : { ...request, body: { ...request.body, model: target } },
      options: this.options,
      sessionId: own ? this.sticky : call.sessionId,
      pool: router.registry.poolFor(target, call.required),
      fallbacks: rest,
      tags: call.tags,
      required: call.required,
      filterFallbacks: this.filterFallbacksOf(target),
      skipped: this.skipped,
    });
    if (this.wider !== undefined && own) run.leaveModel('context_window', this.wider);
    if (!shapeKept) shapeKept = keepShape(placementOfStandIns);
    const pending = this.pending;
    if (pending !== undefined) return pending.then(() => run.run());
    return open === undefined ? run.run() : run.open(open);
  }
}

/** Whether a placement of stand-ins is kept for its class's shape (see `keepShape`). */
let shapeKept = false;

/** A placement of no switchboard and no call, kept for its class's shape. */
function placementOfStandIns(): Placement {
  const request = { account: undefined } as PreparedRequest;
  const how: PlaceHow = { options: undefined, prefix: undefined, open: undefined };
  return new Placement({} as PlacingRouter, {} as CallRecord, request, how);
}

import type { SdkRequestOptions } from '../registry/deployment';
import { SwitchboardError } from '../switchboard.error';
import type { ApiPromiseLike } from './adapter';

/**
 * Whether an attempt needs an `AbortController` of its own between the caller and the SDK: with a
 * caller's signal (the SDK never removes the listener it adds), or a first-token deadline (the
 * request it ends must close its connection). Without either none is made: an AbortSignal costs
 * more than all the rest of an attempt; the SDK's timer then aborts the request until its headers
 * arrive, and the switchboard's own timer settles the call if its body still has not.
 *
 * @example
 * ```ts
 * needsController(options?.signal ?? undefined, 0); // undefined without a signal
 * ```
 */
export function needsController(
  caller: AbortSignal | undefined,
  firstToken: number,
): AbortController | undefined {
  return caller || firstToken !== 0 ? new AbortController() : undefined;
}

/**
 * The SDK options of an attempt. The clients are built with `maxRetries: 0` and the deployment's
 * timeout: a call without options sends none, as a direct SDK call would (per-request options cost
 * the SDK headers); with a controller, the SDK's timer starts a second after the switchboard's, so
 * the switchboard's deadline is the one that speaks.
 *
 * @example
 * ```ts
 * sdkOptionsOf({ signal }, 30_000, controller); // { signal: controller.signal, timeout: 31_000, maxRetries: 0 }
 * ```
 */
export function sdkOptionsOf(
  options: SdkRequestOptions | undefined,
  deadline: number,
  controller: AbortController | undefined,
): SdkRequestOptions | undefined {
  if (controller !== undefined) {
    return {
      ...options,
      signal: controller.signal,
      timeout: deadline + 1000,
      maxRetries: 0,
    } as SdkRequestOptions;
  }
  return options === undefined
    ? undefined
    : ({ ...options, timeout: deadline, maxRetries: 0 } as SdkRequestOptions);
}

/**
 * What an operation's `send()` returned, as the SDK call's `APIPromise` (it has `asResponse()`);
 * anything else is a {@link SwitchboardError} naming the surface (and, when it is a promise, its
 * failure is caught: it must not go unhandled).
 *
 * @example
 * ```ts
 * const sent = apiPromiseOf(op.send(client, body, options), adapter);
 * ```
 */
export function apiPromiseOf(
  sent: unknown,
  adapter: { readonly path: readonly string[] },
): ApiPromiseLike<unknown> {
  if (typeof (sent as Partial<ApiPromiseLike> | undefined)?.asResponse === 'function') {
    return sent as ApiPromiseLike<unknown>;
  }
  if (typeof (sent as Partial<PromiseLike<unknown>> | undefined)?.then === 'function') {
    Promise.resolve(sent).catch(() => undefined);
  }
  throw new SwitchboardError(
    `sb.${adapter.path.join('.')}: an operation's send() must return the SDK call's ` +
      `APIPromise as it is (it has asResponse()), got ${sent === null ? 'null' : typeof sent}`,
  );
}

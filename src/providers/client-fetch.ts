import type { DeploymentConfig } from '../types';

/**
 * @internal The `fetch` an SDK client of a deployment uses instead of the global one, by the
 * deployment's configuration object: a simulation (`simulate: true`) sends each deployment's
 * requests to its simulated upstream this way, once the upstream listens.
 *
 * @example
 * ```ts
 * CLIENT_FETCH.set(config, (url, init) => fetch(url, init));
 * new OpenAI({ baseURL, apiKey, ...clientFetch(config) });
 * ```
 */
export const CLIENT_FETCH = new WeakMap<DeploymentConfig, typeof fetch>();

/**
 * @internal `{ fetch }` for an SDK client's options when one is registered for `config`, else `{}`.
 *
 * @example
 * ```ts
 * new OpenAI({ baseURL, apiKey, ...clientFetch(config) });
 * ```
 */
export function clientFetch(config: DeploymentConfig): { fetch?: typeof fetch } {
  const registered = CLIENT_FETCH.get(config);
  return registered === undefined ? {} : { fetch: registered };
}

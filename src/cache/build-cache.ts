import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { StateStore } from '../state/state-store';
import { PriceTable, costOf } from '../tenants/price';
import type { DeploymentConfig, Price, SwitchboardLogger } from '../types';
import type { CacheOptions } from './cache-options';
import { CacheTelemetry } from './cache-telemetry';
import { ResponseCache } from './response-cache';

/**
 * The response cache of a switchboard with `options.cache`; `undefined` without it, so that a
 * switchboard without a cache does no work for one.
 *
 * @example
 * ```ts
 * const cache = responseCache(options.cache, { registry, state, clock, logger, bytesOf,
 *   deployments: options.deployments, pricing: options.pricing });
 * ```
 */
export function responseCache(
  options: CacheOptions | undefined,
  context: {
    registry: DeploymentRegistry;
    state: StateStore;
    clock: () => number;
    logger: SwitchboardLogger;
    bytesOf: (event: unknown) => Uint8Array | undefined;
    deployments: readonly DeploymentConfig[];
    pricing: Readonly<Record<string, Price>> | undefined;
  },
): ResponseCache | undefined {
  if (options === undefined) return undefined;
  const prices = new PriceTable(context.deployments, context.pricing);
  return new ResponseCache(options, {
    clock: context.clock,
    logger: context.logger,
    telemetry: new CacheTelemetry(context.registry.pools.keys()),
    shared: context.state.sharedValues?.(),
    bytesOf: context.bytesOf,
    price: prices.empty
      ? () => undefined
      : (deployment, model, usage, provider) => {
          // An entry another replica made may name a deployment this one does not have.
          const price =
            prices.on(deployment, model) ?? firstPrice(context.deployments, prices, model);
          return price === undefined ? undefined : costOf(price, usage, provider);
        },
  });
}

function firstPrice(
  deployments: readonly DeploymentConfig[],
  prices: PriceTable,
  model: string,
): Price | undefined {
  for (const d of deployments) {
    const price = prices.on(d.name, model);
    if (price !== undefined) return price;
  }
  return undefined;
}

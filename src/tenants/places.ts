import type { Admission } from '../quota/admission';
import type { TenantCharge } from '../state/tenant-counts';

/**
 * Where an admitted call may go: its model, and the fallbacks the budget it holds covers.
 *
 * @example
 * ```ts
 * const place: TenantPlace = { model: 'gpt-4o', fallbacks: ['gpt-4o-mini'] };
 * ```
 */
export interface TenantPlace {
  model: string;
  fallbacks: readonly string[] | undefined;
}

/**
 * What an admission reserves in USD at the dearest of `models` (the tenants' prices).
 *
 * @example
 * ```ts
 * const prices: Reserving = { reservedUsd: (models, admission) => 0.0012 };
 * ```
 */
export interface Reserving {
  reservedUsd(models: readonly string[], admission: Admission): number;
}

/**
 * Where a call of `admission` (`tokens` in all) may be admitted, in the order tried, with the USD
 * each reserves: each model at the dearest of it and its later fallbacks; over a `budget` also at
 * its own price, with only the fallbacks that price covers. `prices` is passed rather than a
 * closure over the admission: every call with a tenant comes here.
 *
 * @example
 * ```ts
 * placesOf(['gpt-4o', 'gpt-4o-mini'], true, 900, admission, tenants);
 * ```
 */
export function placesOf(
  models: readonly string[],
  budget: boolean,
  tokens: number,
  admission: Admission,
  prices: Reserving,
): TenantSpot[] {
  // No budget, or one model (the common call): one place, at the first model's reservation.
  if (!budget || models.length === 1) {
    const usd = prices.reservedUsd(models.length === 1 ? models : models.slice(0, 1), admission);
    return [spot(models[0]!, restOf(models, 0), tokens, usd)];
  }
  const own = models.map((m) => prices.reservedUsd([m], admission));
  const out: TenantSpot[] = [];
  for (let i = 0; i < models.length; i++) {
    const later = restOf(models, i);
    const dearest = Math.max(own[i]!, ...(later ?? []).map((_, j) => own[i + 1 + j]!));
    out.push(spot(models[i]!, later, tokens, dearest));
    if (dearest > own[i]!) {
      const covered = later?.filter((_, j) => own[i + 1 + j]! <= own[i]!);
      const fallbacks = covered !== undefined && covered.length > 0 ? covered : undefined;
      out.push(spot(models[i]!, fallbacks, tokens, own[i]!));
    }
  }
  return out;
}

/** A place and the charge taken for it. */
type TenantSpot = { place: TenantPlace; charge: TenantCharge };

function spot(
  model: string,
  fallbacks: readonly string[] | undefined,
  tokens: number,
  usd: number,
): TenantSpot {
  return { place: { model, fallbacks }, charge: { tokens, requests: 1, usd } };
}

/** The models after the `i`-th, or `undefined` when none is. */
function restOf(models: readonly string[], i: number): readonly string[] | undefined {
  return i + 1 < models.length ? models.slice(i + 1) : undefined;
}

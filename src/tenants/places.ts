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
 * Where a call of `tokens` may be admitted, in the order tried, with the USD each reserves
 * (`usdAt(models)`: the dearest reservation over `models`): each model at the dearest of it and
 * its later fallbacks; over a `budget` also at its own price, with only the fallbacks that price
 * covers.
 *
 * @example
 * ```ts
 * placesOf(['gpt-4o', 'gpt-4o-mini'], true, 900, (m) => tenants.reservedUsd(m, admission));
 * ```
 */
export function placesOf(
  models: readonly string[],
  budget: boolean,
  tokens: number,
  usdAt: (models: readonly string[]) => number,
): { place: TenantPlace; charge: TenantCharge }[] {
  if (models.length === 1) {
    // One model (the common call): one place, without the closures below.
    const usd = usdAt(models);
    return [
      { place: { model: models[0]!, fallbacks: undefined }, charge: { tokens, requests: 1, usd } },
    ];
  }
  const at = (place: TenantPlace, usd: number) => ({
    place,
    charge: { tokens, requests: 1, usd },
  });
  const rest = (i: number) => (i + 1 < models.length ? models.slice(i + 1) : undefined);
  // No budget: one place, at the first model's reservation.
  if (!budget) {
    return [at({ model: models[0]!, fallbacks: rest(0) }, usdAt(models.slice(0, 1)))];
  }
  const own = models.map((m) => usdAt([m]));
  const out: { place: TenantPlace; charge: TenantCharge }[] = [];
  for (let i = 0; i < models.length; i++) {
    const later = rest(i);
    const dearest = Math.max(own[i]!, ...(later ?? []).map((_, j) => own[i + 1 + j]!));
    out.push(at({ model: models[i]!, fallbacks: later }, dearest));
    if (dearest > own[i]!) {
      const covered = later?.filter((_, j) => own[i + 1 + j]! <= own[i]!);
      const fallbacks = covered !== undefined && covered.length > 0 ? covered : undefined;
      out.push(at({ model: models[i]!, fallbacks }, own[i]!));
    }
  }
  return out;
}

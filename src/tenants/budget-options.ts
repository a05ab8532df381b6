import { z } from 'zod';
import type { StateStoreHealth } from '../state/state-store';
import type { TenantCounts } from '../state/tenant-counts';

/**
 * How budgets behave (`SwitchboardOptions.budgets`).
 *
 * @example
 * ```ts
 * createSwitchboard({ deployments, tenants, pricing, state: redisState({ url }), budgets: { whenStoreDown: 'refuse' } });
 * ```
 */
export interface BudgetOptions {
  /**
   * While the shared store cannot be reached, each replica counts alone: `'admit'` (default)
   * lets budgeted calls through on those local counts (replicas together may overspend);
   * `'refuse'` refuses the calls of every tenant with a budget (429, retry after a second) until
   * the store is back.
   */
  whenStoreDown?: 'admit' | 'refuse';
}

/** The zod schema of {@link BudgetOptions}; the options' schema lists it. */
export const budgetOptionsSchema = z.strictObject(
  {
    whenStoreDown: z.enum(['admit', 'refuse'], { error: "must be 'admit' or 'refuse'" }).optional(),
  },
  { error: "must be an object such as { whenStoreDown: 'refuse' }" },
);

/** How long a budgeted call refused while the store is down is told to wait (ms). */
const STORE_DOWN_RETRY_MS = 1_000;

/**
 * `counts`, refusing a budgeted tenant's calls while `store` is not up when `budgets` says
 * `whenStoreDown: 'refuse'`; `counts` itself otherwise.
 *
 * @example
 * ```ts
 * const counts = budgetCounts(state.tenantCounts(), state, { whenStoreDown: 'refuse' });
 * ```
 */
export function budgetCounts(
  counts: TenantCounts,
  store: { health(): StateStoreHealth },
  budgets: BudgetOptions | undefined,
): TenantCounts {
  if (budgets?.whenStoreDown !== 'refuse') return counts;
  return {
    take(key, limits, charge, now) {
      if ((limits.usd ?? 0) > 0 && store.health().status !== 'up') {
        return {
          ok: false,
          limit: 'budget',
          waitMs: STORE_DOWN_RETRY_MS,
          used: 0,
          value: limits.usd!,
          reason:
            "its budget cannot be checked while the shared store is down (budgets.whenStoreDown: 'refuse')",
        };
      }
      return counts.take(key, limits, charge, now);
    },
    adjust: (key, delta, at, limits) => counts.adjust(key, delta, at, limits),
  };
}

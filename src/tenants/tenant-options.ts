import { z } from 'zod';
import { name, positiveInteger, tags } from '../runtime/option-values';

/**
 * A spending limit in USD per UTC day or month: a call's price is reserved when it is admitted
 * and settled on its answer, so concurrent calls cannot overshoot it.
 *
 * @example
 * ```ts
 * const budget: TenantBudget = { usd: 50, per: 'month' };
 * ```
 */
export interface TenantBudget {
  usd: number;
  per: 'day' | 'month';
}

/**
 * What one tenant may use, across every deployment, model and replica: tokens and requests per
 * minute (counted as the upstream counts them at admission), tokens per UTC day, and a budget;
 * and where its calls may go (`tags`). Absent limits do not apply.
 *
 * @example
 * ```ts
 * const acme: TenantPolicy = { tpm: 20_000, rpm: 100, budget: { usd: 50, per: 'month' } };
 * const euCustomer: TenantPolicy = { tpm: 10_000, tags: ['eu'] };
 * ```
 */
export interface TenantPolicy {
  /** Tokens per minute (prompt estimate + max_tokens at admission, settled on the answer). */
  tpm?: number;
  /** Requests per minute. */
  rpm?: number;
  /** Tokens per UTC day. */
  tokensPerDay?: number;
  /** USD per UTC day or month; needs `options.pricing` for the models the tenant calls. */
  budget?: TenantBudget;
  /**
   * Deployment tags every call of the tenant requires, added to the call's own `tags`: its calls
   * go only to deployments carrying all of them (fallbacks and best effort included). A policy
   * of tags alone counts nothing.
   */
  tags?: string[];
}

const usdMessage = 'must be a non-negative number of USD per million tokens';
const usd = z
  .number({ error: usdMessage })
  .nonnegative({ error: usdMessage })
  .refine(Number.isFinite, { error: usdMessage });

/**
 * The zod schema of a `Price`: a model's (`ModelConfig.pricing`) or the options' (`pricing`).
 *
 * @example
 * ```ts
 * priceSchema.parse({ input: 2.5, output: 10 });
 * ```
 */
export const priceSchema = z.strictObject(
  { input: usd, output: usd, cachedInput: usd.optional(), cacheWrite: usd.optional() },
  {
    error:
      'must be a price in USD per million tokens, such as { input: 2.5, output: 10, cachedInput: 1.25 }',
  },
);

const budgetMessage = "must be a budget such as { usd: 50, per: 'month' }";
const budgetUsd = 'must be a positive number of USD';

const tenantPolicySchema = z.strictObject(
  {
    tpm: positiveInteger.optional(),
    rpm: positiveInteger.optional(),
    tokensPerDay: positiveInteger.optional(),
    budget: z
      .strictObject(
        {
          usd: z
            .number({ error: budgetUsd })
            .positive({ error: budgetUsd })
            .refine(Number.isFinite, { error: budgetUsd }),
          per: z.enum(['day', 'month'], { error: `must be 'day' or 'month' (UTC)` }),
        },
        { error: budgetMessage },
      )
      .optional(),
    tags: tags.optional(),
  },
  { error: "must be a tenant policy such as { tpm: 20000, budget: { usd: 50, per: 'month' } }" },
);

/**
 * The zod schema of `SwitchboardOptions.tenants`: tenant ids (or `'*'`) mapped to their policies.
 *
 * @example
 * ```ts
 * tenantsSchema.parse({ acme: { tpm: 20_000 }, '*': { rpm: 10 } });
 * ```
 */
export const tenantsSchema = z.record(name, tenantPolicySchema, {
  error:
    "must map a tenant (or '*' for every other) to its limits, such as { acme: { tpm: 20000 } }",
});

/**
 * The zod schema of `SwitchboardOptions.pricing`: models mapped to their prices.
 *
 * @example
 * ```ts
 * pricingSchema.parse({ 'gpt-4o': { input: 2.5, output: 10 } });
 * ```
 */
export const pricingSchema = z.record(name, priceSchema, {
  error: "must map a model to its price, such as { 'gpt-4o': { input: 2.5, output: 10 } }",
});

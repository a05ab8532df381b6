import { z } from 'zod';
import { budgetOptionsSchema } from '../tenants/budget-options';
import { quotaPoolsSchema } from '../quota/quota-pools-option';
import { cacheOptionsSchema } from '../cache/cache-options';
import { readinessOptionsSchema } from '../health/health-options';
import { flag, positiveInteger, wholeNumber } from '../runtime/option-values';
import { pricingSchema, tenantsSchema } from '../tenants/tenant-options';
import { deploymentSchema } from './deployment-schema';
import { fallbackMap, fn, isFunction, millis, positiveMillis } from './schema-parts';

/**
 * The zod schema of `SwitchboardOptions`; `validateOptions` and the config-file loaders read it.
 *
 * @example
 * ```ts
 * switchboardOptionsSchema.safeParse({ deployments: [] }).success; // false
 * ```
 */
export const switchboardOptionsSchema = z.strictObject({
  deployments: z
    .array(deploymentSchema, { error: 'must be a list of deployments' })
    .min(1, { error: 'must list at least one deployment' }),
  selector: z
    .custom<unknown>((v) => isFunction(v) || (typeof v === 'object' && v !== null), {
      error: 'must be a Selector instance or class',
    })
    .optional(),
  failover: z
    .strictObject({
      attempts: wholeNumber('must be a whole number of attempts, at least 1', 1).optional(),
      delay: z
        .union([millis('a non-negative number of milliseconds'), fn('a function')], {
          error:
            'must be a non-negative number of milliseconds or a function (error, attempt) => ms',
        })
        .optional(),
      retryIf: fn('a function (error) => boolean').optional(),
      onRetry: fn('a function (attempt, delay, reason, error) => void').optional(),
    })
    .optional(),
  ratelimitWindow: millis('a non-negative number of milliseconds (0 disables resets)').optional(),
  maxCooldown: millis('a non-negative number of milliseconds (the longest cooldown)').optional(),
  usageWindow: z.enum(['sliding', 'fixed'], { error: `must be 'sliding' or 'fixed'` }).optional(),
  queue: z
    .strictObject(
      {
        maxWait: millis('a non-negative number of milliseconds to wait for room'),
        maxQueued: wholeNumber('must be a positive integer (calls waiting at most)', 1).optional(),
        batchMaxWait: millis(
          'a non-negative number of milliseconds a batch call waits for room',
        ).optional(),
        batchHeadroom: z
          .number({ error: 'must be a share of each limit from 0 to below 1, such as 0.15' })
          .min(0, { error: 'must be a share of each limit from 0 to below 1, such as 0.15' })
          .lt(1, { error: 'must be a share of each limit from 0 to below 1, such as 0.15' })
          .optional(),
        headroomHold: millis(
          'a non-negative number of milliseconds after an interactive call that batch calls keep the headroom free',
        ).optional(),
      },
      {
        error:
          'must be an object such as { maxWait: 5000, maxQueued: 1000, batchMaxWait: 60000, batchHeadroom: 0.15, headroomHold: 5000 }',
      },
    )
    .optional(),
  defaultReservation: wholeNumber(
    'must be a non-negative integer number of output tokens',
  ).optional(),
  fallbacks: fallbackMap(
    "must map a model to its fallback models, such as { 'gpt-4o': ['gpt-4o-mini'] }",
  ).optional(),
  cacheAffinity: flag.optional(),
  cache: cacheOptionsSchema.optional(),
  tenants: tenantsSchema.optional(),
  pricing: pricingSchema.optional(),
  firstTokenTimeout: positiveMillis.optional(),
  streamIdleTimeout: positiveMillis.optional(),
  contentFilterFallbacks: fallbackMap(
    "must map a model to the models tried when the content filter refuses, such as { 'gpt-4o': ['gpt-4o-eu'] }",
  ).optional(),
  maxSessions: positiveInteger.optional(),
  maxResponses: positiveInteger.optional(),
  adapters: z
    .array(
      z.custom<unknown>(
        (v) =>
          typeof v === 'object' &&
          v !== null &&
          Array.isArray((v as { path?: unknown }).path) &&
          typeof (v as { facade?: unknown }).facade === 'function',
        { error: 'must be an API adapter (an object with a path and a facade function)' },
      ),
      { error: 'must be a list of API adapters' },
    )
    .optional(),
  state: z
    .custom<unknown>((v) => typeof v === 'object' && v !== null, {
      error: 'must be a state store such as memoryState() or redisState({ url })',
    })
    .optional(),
  logger: z
    .custom<unknown>((v) => typeof v === 'object' && v !== null, {
      error: 'must be a logger with log/warn/error methods',
    })
    .optional(),
  recordTraffic: z
    .string({ error: 'must be the path of a file to append JSON lines to, such as traffic.jsonl' })
    .trim()
    .min(1, { error: 'must be the path of a file to append JSON lines to, such as traffic.jsonl' })
    .optional(),
  simulate: flag.optional(),
  budgets: budgetOptionsSchema.optional(),
  quotaPools: quotaPoolsSchema.optional(),
  health: readinessOptionsSchema.optional(),
  clock: fn('a function returning milliseconds').optional(),
  random: fn('a function returning a number in [0, 1)').optional(),
});

import { z } from 'zod';

/**
 * How replicas sharing a store admit calls: from leases, shares of each limit's room taken from
 * the store in one atomic step and spent without asking it again.
 *
 * @example
 * ```ts
 * redisState({ url, leases: { share: 0.1 }, replicas: 4 });
 * ```
 */
export interface LeaseOptions {
  /** Fraction of a limit's remaining room one lease takes (at least one call's charge). Default 0.05. */
  share?: number;
}

/**
 * {@link LeaseOptions} with the default filled in, and the replicas a limit is split among
 * while the store cannot be reached (`undefined`: learned from the store).
 *
 * @example
 * ```ts
 * const o: ResolvedLeaseOptions = { share: 0.05, replicas: undefined };
 * ```
 */
export interface ResolvedLeaseOptions {
  share: number;
  replicas: number | undefined;
}

/** The default {@link LeaseOptions.share}. */
const DEFAULT_LEASE_SHARE = 0.05;

/** The zod schema of `redisState({ leases })`: options, or `false` to admit without leases. */
export const leaseOptionsSchema = z
  .union(
    [
      z.literal(false),
      z.strictObject({
        share: z
          .number({ error: 'must be a number above 0 and at most 1, e.g. 0.05' })
          .gt(0, { error: 'must be a number above 0 and at most 1, e.g. 0.05' })
          .max(1, { error: 'must be a number above 0 and at most 1, e.g. 0.05' })
          .optional(),
      }),
    ],
    { error: 'must be { share?: number } or false' },
  )
  .optional();

/** The zod schema of `redisState({ replicas })`. */
export const replicasSchema = z
  .number({ error: 'must be a whole number of replicas >= 1, e.g. 4' })
  .int({ error: 'must be a whole number of replicas >= 1, e.g. 4' })
  .min(1, { error: 'must be a whole number of replicas >= 1, e.g. 4' })
  .max(1024, { error: 'must be a whole number of replicas >= 1, e.g. 4' })
  .optional();

/**
 * The leases' options from `redisState()`'s, or `undefined` when `leases: false`.
 *
 * @example
 * ```ts
 * resolveLeases({ share: 0.1 }, 4); // { share: 0.1, replicas: 4 }
 * ```
 */
export function resolveLeases(
  leases: LeaseOptions | false | undefined,
  replicas: number | undefined,
): ResolvedLeaseOptions | undefined {
  if (leases === false) return undefined;
  return { share: leases?.share ?? DEFAULT_LEASE_SHARE, replicas };
}

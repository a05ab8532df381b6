import { z } from 'zod';

/**
 * The `health` option: when readiness holds.
 *
 * @example
 * ```ts
 * createSwitchboard({ deployments, health: { ready: 'all' } });
 * ```
 */
export interface ReadinessOptions {
  /**
   * `'any'` (default): ready while at least one configured model can be served, so that one
   * model's outage (which every replica shares) does not take every pod out of the Service and
   * the healthy models' traffic with it. `'all'`: ready only while every model can be served.
   */
  ready?: 'any' | 'all';
}

/** @internal The zod schema of {@link ReadinessOptions}. */
export const readinessOptionsSchema = z.strictObject(
  { ready: z.enum(['any', 'all'], { error: `must be 'any' or 'all'` }).optional() },
  { error: "must be an object such as { ready: 'any' }" },
);

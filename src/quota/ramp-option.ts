import { z } from 'zod';

const RAMP_UP = 'must be a boolean: false sends a cold or idle deployment a whole bucket at once';

/**
 * The zod schema of `ModelConfig.rampUp`: whether a model's token buckets ramp after a cold start
 * or an idle spell (see `Ramp`); the deployments' schema lists it.
 *
 * @example
 * ```ts
 * rampUpSchema.parse(false); // a dedicated deployment, no acceleration limit to fear
 * ```
 */
export const rampUpSchema = z.boolean({ error: RAMP_UP });

/**
 * Validation of the simulated upstream's options: one zod schema, and one error that lists every
 * problem with its field path.
 */
import { z } from 'zod';

import { describeIssues } from '../errors/field-path';
import { SwitchboardError } from '../switchboard.error';

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._~-]*$/;

const nonNegative = (what: string) =>
  z
    .number({ error: `must be ${what}` })
    .refine((value) => Number.isFinite(value) && value >= 0, { error: `must be ${what}` });
const wholeNonNegative = (what: string) =>
  z
    .number({ error: `must be ${what}` })
    .int({ error: `must be ${what}` })
    .min(0, { error: `must be ${what}` });
const limit = nonNegative('a number >= 0 (0 = unlimited)').optional();

/** The zod schema of one simulated deployment's options. */
export const simulatedDeploymentSchema = z.strictObject({
  name: z.string({ error: 'must be a string' }).regex(NAME_PATTERN, {
    error: 'must use letters, digits, ".", "_", "~" or "-", not start with a symbol',
  }),
  latency: nonNegative('a number of milliseconds >= 0').optional(),
  chunkDelay: nonNegative('a number of milliseconds >= 0').optional(),
  tpm: limit,
  rpm: limit,
  itpm: limit,
  otpm: limit,
  timeScale: z
    .number({ error: 'must be a finite number > 0' })
    .refine((value) => Number.isFinite(value) && value > 0, {
      error: 'must be a finite number > 0',
    })
    .optional(),
  apiKey: z.string({ error: 'must be a string' }).optional(),
  completionTokens: nonNegative('a number of tokens >= 0').optional(),
  quota: z.enum(['faithful', 'friendly'], { error: `must be 'faithful' or 'friendly'` }).optional(),
  inferredMaxTokens: wholeNonNegative('a whole number of tokens >= 0').optional(),
  requestWindow: z.enum(['10s', '1s'], { error: `must be '10s' or '1s'` }).optional(),
  contextWindow: wholeNonNegative('a whole number of tokens >= 0 (0 = no limit)').optional(),
  chargeMaxTokens: z.boolean({ error: 'must be true or false' }).optional(),
  rules: z
    .enum(['azure', 'azure-ptu', 'openai'], { error: `must be 'azure', 'azure-ptu' or 'openai'` })
    .optional(),
  outputWeight: z
    .number({ error: 'must be a finite number > 0' })
    .refine((value) => Number.isFinite(value) && value > 0, {
      error: 'must be a finite number > 0',
    })
    .optional(),
  models: z
    .array(z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }), {
      error: 'must be a list of model ids',
    })
    .optional(),
  deploymentNames: z
    .array(z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }), {
      error: 'must be a list of deployment names',
    })
    .optional(),
  quotaPool: z
    .string({ error: 'must be a string' })
    .min(1, { error: 'must not be empty' })
    .optional(),
});

/** What the members of one quota pool must state alike: the pool has one of each. */
const POOLED = [
  'tpm',
  'rpm',
  'itpm',
  'otpm',
  'quota',
  'rules',
  'timeScale',
  'requestWindow',
] as const;

/** The zod schema of {@link SimulatedUpstreamOptions}. */
export const simulatedUpstreamSchema = z.strictObject({
  deployments: z
    .array(simulatedDeploymentSchema, { error: 'must be a list of deployments' })
    .superRefine((deployments, ctx) => {
      const seen = new Set<string>();
      const pools = new Map<string, number>();
      deployments.forEach((deployment, i) => {
        const pool = deployment.quotaPool;
        const first = pool === undefined ? undefined : pools.get(pool);
        if (pool !== undefined && first === undefined) pools.set(pool, i);
        for (const key of first === undefined ? [] : POOLED) {
          if (deployment[key] === deployments[first!]![key]) continue;
          ctx.addIssue({
            code: 'custom',
            path: [i, key],
            message: `differs from deployments[${first}].${key}, in the same quota pool '${pool}': a pool has one ${key}`,
          });
        }
        if (seen.has(deployment.name)) {
          ctx.addIssue({
            code: 'custom',
            path: [i, 'name'],
            message: `duplicates the name '${deployment.name}': names must be unique`,
          });
        }
        seen.add(deployment.name);
      });
    }),
  host: z.string({ error: 'must be a host name or address' }).optional(),
  port: z
    .number({ error: 'must be a port number 0..65535' })
    .int({ error: 'must be a port number 0..65535' })
    .min(0, { error: 'must be a port number 0..65535' })
    .max(65_535, { error: 'must be a port number 0..65535' })
    .optional(),
  clock: z
    .custom<() => number>((value) => typeof value === 'function', {
      error: 'must be a function returning milliseconds',
    })
    .optional(),
  keepAliveTimeout: nonNegative('a number of milliseconds >= 0').optional(),
  quotaPools: z
    .record(
      z.string(),
      z.strictObject({
        tpm: nonNegative('a number >= 0').optional(),
        rpm: nonNegative('a number >= 0').optional(),
        itpm: nonNegative('a number >= 0').optional(),
        otpm: nonNegative('a number >= 0').optional(),
      }),
      { error: 'must map a quota pool path to its limits, such as { org: { tpm: 100000 } }' },
    )
    .optional(),
});

/**
 * Checks `options` against `schema`; throws one {@link SwitchboardError} naming every invalid
 * field (`deployments[1].tpm must be ...`).
 */
export function checkOptions<T>(schema: z.ZodType<T>, options: unknown, what: string): T {
  const parsed = schema.safeParse(options);
  if (parsed.success) return parsed.data;
  const problems = describeIssues(parsed.error, options);
  throw new SwitchboardError(`Invalid ${what}: ${problems.join('; ')}`);
}

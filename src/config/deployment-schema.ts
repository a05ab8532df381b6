import { z } from 'zod';
import { flag, name, tags, wholeNumber } from '../runtime/option-values';
import { priceSchema } from '../tenants/tenant-options';
import { azurePathProblem, providerMessage } from './azure-endpoint';
import { fn, millis, positiveMillis } from './schema-parts';
import { blockedPortProblem, hasControlCharacter, KEY_CONTROL_MESSAGE } from './value-checks';
import { rampUpSchema } from '../quota/ramp-option';

const quota = wholeNumber('must be a non-negative integer (0 = unlimited)');
const httpUrl = z
  .url({
    protocol: /^https?$/,
    error: 'must be an http(s) URL such as https://my-resource.openai.azure.com/openai/v1/',
  })
  .refine((url) => blockedPortProblem(url) === undefined, {
    error: (issue) => blockedPortProblem(issue.input as string),
  });
const apiKeyMessage = 'must be a non-empty string or a function returning a Promise<string>';
// The string branch carries the message too: an empty string fails there, not on the union.
const keyString = z
  .string()
  .min(1, { error: apiKeyMessage })
  .refine((key) => !hasControlCharacter(key), { error: KEY_CONTROL_MESSAGE });
const apiKey = z.union([keyString, fn('a string or a function')], { error: apiKeyMessage });

const priority = wholeNumber('must be a non-negative integer (0 = most preferred)');
const maxInFlight = wholeNumber('must be a positive integer (the most calls in flight at once)', 1);
const weight = z
  .number({ error: 'must be a positive number (default 1)' })
  .positive({ error: 'must be a positive number (default 1)' });
const tokens = wholeNumber('must be a positive integer number of tokens', 1);

// The upstream's own name: model ids on api.openai.com hold ':' and '.', so only blanks are refused.
const wireNameMessage =
  "must be a non-empty string without surrounding spaces: the upstream's name for the model (the Azure deployment name)";
const wireName = z
  .string({ error: wireNameMessage })
  .regex(/^\S(?:.*\S)?$/, { error: wireNameMessage });

const outputWeightMessage =
  'must be a finite number of at least 1: the input tokens one output token counts for (gpt-4.1 on PTU: 4)';

const model = z.strictObject({
  name,
  deployment: wireName.optional(),
  tpm: quota.optional(),
  rpm: quota.optional(),
  itpm: quota.optional(),
  otpm: quota.optional(),
  requestWindow: z.enum(['1s', '10s'], { error: "must be '1s' or '10s'" }).optional(),
  outputReservation: wholeNumber('must be a non-negative whole number of tokens').optional(),
  cacheReadsCountInput: flag.optional(),
  rampUp: rampUpSchema.optional(),
  provisioned: flag.optional(),
  outputWeight: z
    .number({ error: outputWeightMessage })
    .min(1, { error: outputWeightMessage })
    .refine(Number.isFinite, { error: outputWeightMessage })
    .optional(),
  quotaPool: name.optional(),
  cooldown: millis('a non-negative number of milliseconds').optional(),
  priority: priority.optional(),
  weight: weight.optional(),
  maxInFlight: maxInFlight.optional(),
  pricing: priceSchema.optional(),
  contextWindow: tokens.optional(),
  maxOutput: tokens.optional(),
  firstTokenTimeout: positiveMillis.optional(),
  streamIdleTimeout: positiveMillis.optional(),
});
const models = z.array(model, { error: 'must be a list of models' }).min(1, {
  error: 'must list at least one model',
});

/** What both kinds of deployment state alike, after their endpoint. */
const deploymentFields = {
  apiKey: apiKey.optional(),
  timeout: positiveMillis.optional(),
  priority: priority.optional(),
  weight: weight.optional(),
  maxInFlight: maxInFlight.optional(),
  tags: tags.optional(),
  models,
};

const openai = z.strictObject({
  provider: z.literal('openai'),
  name,
  baseURL: httpUrl
    .refine((url) => azurePathProblem(url) === undefined, {
      error: (issue) => azurePathProblem(issue.input as string),
    })
    .optional(),
  ...deploymentFields,
});
const resource = z
  .string({ error: 'must be a Foundry resource name' })
  .regex(/^[A-Za-z0-9][A-Za-z0-9-]*$/, {
    error: 'must be a Foundry resource name (letters, digits and dashes)',
  });
const anthropic = z
  .strictObject({
    provider: z.literal('anthropic'),
    name,
    resource: resource.optional(),
    baseURL: httpUrl.optional(),
    ...deploymentFields,
  })
  .refine((d) => d.resource !== undefined || d.baseURL !== undefined, {
    error: 'needs `resource` (the Foundry resource name) or `baseURL`',
  });

/**
 * What a deployment of either provider may hold: the rest of a deployment whose `provider` is
 * missing or unknown is checked against it, so that its other problems are told in the same pass.
 */
const eitherProvider = z.strictObject({
  provider: z.unknown().optional(),
  name,
  resource: resource.optional(),
  baseURL: httpUrl.optional(),
  ...deploymentFields,
});

/**
 * The zod schema of one entry of `deployments`: an OpenAI or an Anthropic deployment with its
 * models, the provider's name deciding which.
 *
 * @example
 * ```ts
 * deploymentSchema.parse({ provider: 'openai', name: 'east', models: [{ name: 'gpt-4o-mini' }] });
 * ```
 */
export const deploymentSchema = z
  .discriminatedUnion('provider', [openai, anthropic], {
    error: (issue) =>
      issue.code === 'invalid_union'
        ? providerMessage((issue.input as { provider?: unknown } | undefined)?.provider)
        : 'must be a deployment object',
  })
  .superRefine(
    (value, ctx) => {
      const rest = eitherProvider.safeParse(value);
      if (!rest.success) for (const issue of rest.error.issues) ctx.addIssue({ ...issue });
    },
    { when: (payload) => unknownProvider(payload.value) },
  );

/** An object whose `provider` is neither of the two. */
function unknownProvider(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { provider } = value as { provider?: unknown };
  return provider !== 'openai' && provider !== 'anthropic';
}

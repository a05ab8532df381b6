import { z } from 'zod';
import { clip } from '../errors/clip';
import { describeIssues, formatPath, formatProblem } from '../errors/field-path';
import { checkFallbacks } from './fallbacks';
import { azurePathProblem, providerMessage } from './azure-endpoint';
import { readinessOptionsSchema } from '../health/health-options';
import { cacheOptionsSchema } from '../cache/cache-options';
import { budgetOptionsSchema } from '../tenants/budget-options';
import { checkPoolLevels, quotaPoolsSchema } from '../quota/quota-pools-option';
import { SwitchboardError } from '../switchboard.error';
import { tenantOf } from '../scheduling/tenant-of';
import type { SwitchboardOptions } from './switchboard-options';
import type { ConfigProblem, ModelConfig } from '../types';
import {
  blockedPortProblem,
  hasControlCharacter,
  KEY_CONTROL_MESSAGE,
  timerMillis,
} from './value-checks';

export type { ConfigProblem } from '../types';

const isFunction = (v: unknown): v is (...args: never[]) => unknown => typeof v === 'function';
const fn = (what: string) => z.custom<(...args: never[]) => unknown>(isFunction, `must be ${what}`);

const name = z
  .string({ error: 'must be a non-empty string' })
  .trim()
  .min(1, { error: 'must be a non-empty string' });
const quota = z
  .number({ error: 'must be a non-negative integer (0 = unlimited)' })
  .int({ error: 'must be a non-negative integer (0 = unlimited)' })
  .nonnegative({ error: 'must be a non-negative integer (0 = unlimited)' });
const millis = (what: string) =>
  timerMillis(
    z
      .number({ error: `must be ${what}` })
      .int({ error: `must be ${what}` })
      .nonnegative({ error: `must be ${what}` }),
  );
const positiveMillis = timerMillis(
  z
    .number({ error: 'must be a positive number of milliseconds' })
    .int({ error: 'must be a positive number of milliseconds' })
    .positive({ error: 'must be a positive number of milliseconds' }),
);
const positiveInteger = z
  .number({ error: 'must be a positive integer' })
  .int({ error: 'must be a positive integer' })
  .positive({ error: 'must be a positive integer' });
/** Models mapped to the models tried instead (`fallbacks`, `contentFilterFallbacks`). */
const fallbackMap = (error: string) =>
  z.record(
    name,
    z
      .array(name, { error: 'must be a list of model names' })
      .min(1, { error: 'must list at least one fallback model' }),
    { error },
  );
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

const priority = z
  .number({ error: 'must be a non-negative integer (0 = most preferred)' })
  .int({ error: 'must be a non-negative integer (0 = most preferred)' })
  .nonnegative({ error: 'must be a non-negative integer (0 = most preferred)' });
const maxInFlight = z
  .number({ error: 'must be a positive integer (the most calls in flight at once)' })
  .int({ error: 'must be a positive integer (the most calls in flight at once)' })
  .positive({ error: 'must be a positive integer (the most calls in flight at once)' });
const weight = z
  .number({ error: 'must be a positive number (default 1)' })
  .positive({ error: 'must be a positive number (default 1)' });

const tagMessage = "must be a list of tags, words without blanks or commas such as ['eu', 'gdpr']";
const tags = z.array(
  z
    .string({ error: tagMessage })
    .max(64, { error: 'must be at most 64 characters' })
    .regex(/^[^\s,]+$/, { error: tagMessage }),
  { error: tagMessage },
);
const usdMessage = 'must be a non-negative number of USD per million tokens';
const usd = z
  .number({ error: usdMessage })
  .nonnegative({ error: usdMessage })
  .refine(Number.isFinite, { error: usdMessage });
const price = z.strictObject(
  { input: usd, output: usd, cachedInput: usd.optional(), cacheWrite: usd.optional() },
  {
    error:
      'must be a price in USD per million tokens, such as { input: 2.5, output: 10, cachedInput: 1.25 }',
  },
);
const tenantLimit = positiveInteger;
const budgetMessage = "must be a budget such as { usd: 50, per: 'month' }";
const tenantPolicy = z.strictObject(
  {
    tpm: tenantLimit.optional(),
    rpm: tenantLimit.optional(),
    tokensPerDay: tenantLimit.optional(),
    budget: z
      .strictObject(
        {
          usd: z
            .number({ error: 'must be a positive number of USD' })
            .positive({ error: 'must be a positive number of USD' })
            .refine(Number.isFinite, { error: 'must be a positive number of USD' }),
          per: z.enum(['day', 'month'], { error: `must be 'day' or 'month' (UTC)` }),
        },
        { error: budgetMessage },
      )
      .optional(),
    tags: tags.optional(),
  },
  { error: "must be a tenant policy such as { tpm: 20000, budget: { usd: 50, per: 'month' } }" },
);

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
  outputReservation: z
    .number({ error: 'must be a non-negative whole number of tokens' })
    .int({ error: 'must be a non-negative whole number of tokens' })
    .nonnegative({ error: 'must be a non-negative whole number of tokens' })
    .optional(),
  cacheReadsCountInput: z.boolean({ error: 'must be true or false' }).optional(),
  provisioned: z.boolean({ error: 'must be true or false' }).optional(),
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
  pricing: price.optional(),
  contextWindow: z
    .number({ error: 'must be a positive integer number of tokens' })
    .int({ error: 'must be a positive integer number of tokens' })
    .positive({ error: 'must be a positive integer number of tokens' })
    .optional(),
  maxOutput: z
    .number({ error: 'must be a positive integer number of tokens' })
    .int({ error: 'must be a positive integer number of tokens' })
    .positive({ error: 'must be a positive integer number of tokens' })
    .optional(),
  firstTokenTimeout: positiveMillis.optional(),
  streamIdleTimeout: positiveMillis.optional(),
});
const models = z.array(model, { error: 'must be a list of models' }).min(1, {
  error: 'must list at least one model',
});

const openai = z.strictObject({
  provider: z.literal('openai'),
  name,
  baseURL: httpUrl
    .refine((url) => azurePathProblem(url) === undefined, {
      error: (issue) => azurePathProblem(issue.input as string),
    })
    .optional(),
  apiKey: apiKey.optional(),
  timeout: positiveMillis.optional(),
  priority: priority.optional(),
  weight: weight.optional(),
  maxInFlight: maxInFlight.optional(),
  tags: tags.optional(),
  models,
});
const anthropic = z
  .strictObject({
    provider: z.literal('anthropic'),
    name,
    resource: z
      .string({ error: 'must be a Foundry resource name' })
      .regex(/^[A-Za-z0-9][A-Za-z0-9-]*$/, {
        error: 'must be a Foundry resource name (letters, digits and dashes)',
      })
      .optional(),
    baseURL: httpUrl.optional(),
    apiKey: apiKey.optional(),
    timeout: positiveMillis.optional(),
    priority: priority.optional(),
    weight: weight.optional(),
    maxInFlight: maxInFlight.optional(),
    tags: tags.optional(),
    models,
  })
  .refine((d) => d.resource !== undefined || d.baseURL !== undefined, {
    error: 'needs `resource` (the Foundry resource name) or `baseURL`',
  });

const deployment = z.discriminatedUnion('provider', [openai, anthropic], {
  error: (issue) =>
    issue.code === 'invalid_union'
      ? providerMessage((issue.input as { provider?: unknown } | undefined)?.provider)
      : 'must be a deployment object',
});

/** The zod schema of {@link SwitchboardOptions}; config-file loaders reuse it. */
export const switchboardOptionsSchema = z.strictObject({
  deployments: z
    .array(deployment, { error: 'must be a list of deployments' })
    .min(1, { error: 'must list at least one deployment' }),
  selector: z
    .custom<unknown>((v) => isFunction(v) || (typeof v === 'object' && v !== null), {
      error: 'must be a Selector instance or class',
    })
    .optional(),
  failover: z
    .strictObject({
      attempts: z
        .number({ error: 'must be a whole number of attempts, at least 1' })
        .int({ error: 'must be a whole number of attempts, at least 1' })
        .min(1, { error: 'must be a whole number of attempts, at least 1' })
        .optional(),
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
        maxQueued: z
          .number({ error: 'must be a positive integer (calls waiting at most)' })
          .int({ error: 'must be a positive integer (calls waiting at most)' })
          .positive({ error: 'must be a positive integer (calls waiting at most)' })
          .optional(),
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
  defaultReservation: z
    .number({ error: 'must be a non-negative integer number of output tokens' })
    .int({ error: 'must be a non-negative integer number of output tokens' })
    .nonnegative({ error: 'must be a non-negative integer number of output tokens' })
    .optional(),
  fallbacks: fallbackMap(
    "must map a model to its fallback models, such as { 'gpt-4o': ['gpt-4o-mini'] }",
  ).optional(),
  cacheAffinity: z.boolean({ error: 'must be true or false' }).optional(),
  cache: cacheOptionsSchema.optional(),
  tenants: z
    .record(name, tenantPolicy, {
      error:
        "must map a tenant (or '*' for every other) to its limits, such as { acme: { tpm: 20000 } }",
    })
    .optional(),
  pricing: z
    .record(name, price, {
      error: "must map a model to its price, such as { 'gpt-4o': { input: 2.5, output: 10 } }",
    })
    .optional(),
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
  simulate: z.boolean({ error: 'must be true or false' }).optional(),
  budgets: budgetOptionsSchema.optional(),
  quotaPools: quotaPoolsSchema.optional(),
  health: readinessOptionsSchema.optional(),
  clock: fn('a function returning milliseconds').optional(),
  random: fn('a function returning a number in [0, 1)').optional(),
});

/**
 * Checks options and returns them unchanged, or throws one {@link SwitchboardError} that lists every
 * problem with its field path.
 *
 * @example
 * ```ts
 * validateOptions({ deployments: [] });
 * // SwitchboardError: Invalid switchboard options: deployments must list at least one deployment
 * ```
 */
export function validateOptions(options: unknown): SwitchboardOptions {
  if (typeof options !== 'object' || options === null) {
    throw new SwitchboardError(
      'Invalid switchboard options: expected an object such as { deployments: [...] }',
      { code: 'config' },
    );
  }
  const parsed = switchboardOptionsSchema.safeParse(options);
  const problems = parsed.success ? [] : describeIssues(parsed.error, options);
  if (parsed.success) {
    problems.push(...crossCheck(options as SwitchboardOptions).map((p) => formatProblem(p)));
  }
  if (problems.length > 0) {
    throw new SwitchboardError(`Invalid switchboard options: ${problems.join('; ')}`, {
      code: 'config',
    });
  }
  return options as SwitchboardOptions;
}

/**
 * Where a deployment's requests go, written one way for every spelling of it: a trailing slash or
 * an upper-case host does not make another upstream.
 */
function endpointOf(d: SwitchboardOptions['deployments'][number]): string {
  const raw =
    d.baseURL ??
    (d.provider === 'openai'
      ? 'https://api.openai.com/v1'
      : `https://${d.resource ?? ''}.services.ai.azure.com/anthropic`);
  try {
    const url = new URL(raw);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
  } catch {
    return raw.replace(/\/+$/, '');
  }
}

/**
 * Rules that span several deployments (unique names, one provider per model, one name per
 * upstream deployment, fallbacks that exist, fit the API and make no cycle, tenants' tags that
 * some deployment carries), each at its field path. Run it on options that passed
 * {@link switchboardOptionsSchema}.
 *
 * @example
 * ```ts
 * crossCheck({ deployments: [east, { ...east }] }).map((p) => formatProblem(p));
 * // ["deployments[1].name 'east' duplicates deployments[0].name: deployment names must be unique"]
 * ```
 */
export function crossCheck(options: SwitchboardOptions): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const seen = new Map<string, number>();
  const providerOf = new Map<string, { provider: string; index: number }>();
  // One upstream deployment (provider, endpoint, wire name) -> the model entry that claims it.
  const upstream = new Map<string, { name: string; at: PropertyKey[] }>();
  // A model's context window is the model's, whichever deployment serves it.
  const windows = new Map<string, { window: number | undefined; at: PropertyKey[] }>();
  options.deployments.forEach((d, i) => {
    const endpoint = endpointOf(d);
    const first = seen.get(d.name);
    if (first !== undefined) {
      problems.push({
        path: ['deployments', i, 'name'],
        message: `'${clip(d.name)}' duplicates ${formatPath(['deployments', first, 'name'])}: deployment names must be unique`,
      });
    } else seen.set(d.name, i);
    const names = new Set<string>();
    d.models.forEach((m, j) => {
      if (names.has(m.name)) {
        problems.push({
          path: ['deployments', i, 'models', j, 'name'],
          message: `'${clip(m.name)}' is listed twice in deployment '${clip(d.name)}'`,
        });
      }
      names.add(m.name);
      const wire = m.deployment ?? m.name;
      const key = `${d.provider} ${endpoint} ${wire}`;
      const claimed = upstream.get(key);
      if (claimed !== undefined && claimed.name !== m.name) {
        problems.push({
          path: ['deployments', i, 'models', j, m.deployment === undefined ? 'name' : 'deployment'],
          message: `'${clip(m.name)}' and ${formatPath(claimed.at)} ('${clip(claimed.name)}') both name the upstream deployment '${clip(wire)}' on ${clip(endpoint)}: each name would count that deployment's quota alone, so together they would send it more than it allows. Serve it under one name (fallbacks can send a second name's calls there), or point this entry at another deployment`,
        });
      } else if (claimed === undefined) {
        upstream.set(key, { name: m.name, at: ['deployments', i, 'models', j] });
      }
      const window = windows.get(m.name);
      if (window === undefined) {
        windows.set(m.name, { window: m.contextWindow, at: ['deployments', i, 'models', j] });
      } else if (window.window !== m.contextWindow) {
        problems.push({
          path: ['deployments', i, 'models', j, 'contextWindow'],
          message: `is ${m.contextWindow ?? 'absent'} but ${formatPath([...window.at, 'contextWindow'])} is ${window.window ?? 'absent'}: a model has one context window, give every deployment of '${m.name}' the same`,
        });
      }
      const other = providerOf.get(m.name);
      if (other && other.provider !== d.provider) {
        problems.push({
          path: ['deployments', i, 'models', j, 'name'],
          message: `'${clip(m.name)}' is served by both an ${other.provider} deployment (${formatPath(['deployments', other.index])}) and an ${d.provider} deployment: a model name must belong to one provider`,
        });
      } else if (!other) providerOf.set(m.name, { provider: d.provider, index: i });
    });
  });
  problems.push(...checkFallbacks(options));
  problems.push(...checkTenantTags(options));
  problems.push(...checkTenantNames(options));
  problems.push(...checkQuotaPools(options));
  problems.push(...checkPoolLevels(options.deployments, options.quotaPools));
  problems.push(...checkProvisioned(options));
  return problems;
}

/**
 * Provisioned throughput is Azure OpenAI's: `provisioned` belongs on an `openai` deployment, and
 * `outputWeight` weighs output in a provisioned deployment's utilization only.
 */
function checkProvisioned(options: SwitchboardOptions): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  options.deployments.forEach((d, i) => {
    d.models.forEach((m, j) => {
      const at: PropertyKey[] = ['deployments', i, 'models', j];
      if (m.provisioned === true && d.provider !== 'openai') {
        problems.push({
          path: [...at, 'provisioned'],
          message: `is set on '${clip(m.name)}' of the ${d.provider} deployment '${clip(d.name)}': provisioned throughput (PTU) is Azure OpenAI's, on an 'openai' deployment`,
        });
      }
      if (m.outputWeight !== undefined && m.provisioned !== true) {
        problems.push({
          path: [...at, 'outputWeight'],
          message: `is set on '${clip(m.name)}' of '${clip(d.name)}', which is not provisioned: output is weighted in a PTU's utilization only, set provisioned: true (or drop outputWeight)`,
        });
      }
    });
  });
  return problems;
}

/**
 * A tenant id `a/b` is a part of tenant `a`, held by `a`'s policy: a policy named `a/b` would
 * never apply, which is a mistake of the configuration, said at once.
 */
function checkTenantNames(options: SwitchboardOptions): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const name of Object.keys(options.tenants ?? {})) {
    const scope = tenantOf(name);
    if (scope === name) continue;
    problems.push({
      path: ['tenants', name],
      message: `names a part of tenant ${scope}, whose policy holds it (counted together with ${scope}): name the policy ${scope}`,
    });
  }
  return problems;
}

/** What every member of a quota pool must state alike: the pool counts them once. */
const POOLED = [
  'tpm',
  'rpm',
  'itpm',
  'otpm',
  'requestWindow',
  'outputReservation',
  'cacheReadsCountInput',
  'provisioned',
  'outputWeight',
] as const;

/**
 * The members of one `quotaPool` share one count of every limit: they must state the same limits
 * (else which one would the pool hold?) and speak to one provider (whose rules count them).
 */
function checkQuotaPools(options: SwitchboardOptions): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const first = new Map<
    string,
    { provider: string; model: ModelConfig; where: string; at: PropertyKey[] }
  >();
  options.deployments.forEach((d, i) => {
    d.models.forEach((m, j) => {
      if (m.quotaPool === undefined) return;
      const at: PropertyKey[] = ['deployments', i, 'models', j];
      const where = `'${clip(m.name)}' on '${clip(d.name)}'`;
      const pool = first.get(m.quotaPool);
      if (pool === undefined) {
        first.set(m.quotaPool, { provider: d.provider, model: m, where, at });
        return;
      }
      if (pool.provider !== d.provider) {
        problems.push({
          path: [...at, 'quotaPool'],
          message: `puts ${where} (${d.provider}) in quota pool '${clip(m.quotaPool)}' with ${pool.where} (${pool.provider}, ${formatPath(pool.at)}): a pool belongs to one provider`,
        });
        return;
      }
      for (const key of POOLED) {
        if (m[key] === pool.model[key]) continue;
        problems.push({
          path: [...at, key],
          message: `is ${String(m[key] ?? 'absent')} for ${where} but ${String(pool.model[key] ?? 'absent')} for ${pool.where} (${formatPath(pool.at)}), both in quota pool '${clip(m.quotaPool)}': the pool has one ${key}, state the same on every member`,
        });
      }
    });
  });
  return problems;
}

/**
 * A tenant's `tags` bind every call it makes: where no deployment carries them all, each of its
 * calls would fail, which is a mistake of the configuration, said at once.
 */
function checkTenantTags(options: SwitchboardOptions): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const [name, policy] of Object.entries(options.tenants ?? {})) {
    const tags = policy.tags ?? [];
    if (tags.length === 0) continue;
    const carried = options.deployments.some((d) => tags.every((t) => d.tags?.includes(t)));
    if (!carried) {
      problems.push({
        path: ['tenants', name, 'tags'],
        message: `names ${tags.join(', ')}, but no deployment carries ${tags.length === 1 ? 'it' : 'them all'}: every call of this tenant would fail. Tag the deployments that may serve it (deployments[].tags), or correct the tenant's tags`,
      });
    }
  }
  return problems;
}

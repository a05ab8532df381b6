import { clip } from '../errors/clip';
import { describeIssues, formatPath, formatProblem } from '../errors/field-path';
import { checkPoolLevels } from '../quota/quota-pools-option';
import { checkTenants } from '../tenants/tenant-checks';
import { SwitchboardError } from '../switchboard.error';
import type { ConfigProblem, ModelConfig } from '../types';
import { checkFallbacks } from './fallbacks';
import { switchboardOptionsSchema } from './options-schema';
import type { SwitchboardOptions } from './switchboard-options';

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
  problems.push(...checkTenants(options.tenants, options.deployments));
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

/** What every member of a quota pool must state alike: the pool counts them once. */
const POOLED = [
  'tpm',
  'rpm',
  'itpm',
  'otpm',
  'requestWindow',
  'outputReservation',
  'cacheReadsCountInput',
  'rampUp',
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

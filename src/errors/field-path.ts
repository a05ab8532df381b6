// How an error message names the bad field: the path to it as a user would write it, and one
// line per problem. The options, the config file and redisState() options all say it this way.
import type { z } from 'zod';
import type { ConfigProblem } from '../types';

/**
 * `deployments[1].models[0].tpm` from zod's `['deployments', 1, 'models', 0, 'tpm']`.
 *
 * @example
 * ```ts
 * formatPath(['deployments', 1, 'models', 0, 'tpm']); // 'deployments[1].models[0].tpm'
 * ```
 */
export function formatPath(path: readonly PropertyKey[], root = ''): string {
  let out = root;
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out || '(options)';
}

/**
 * The line of a {@link ConfigProblem}: its field path, then its message.
 *
 * @example
 * ```ts
 * formatProblem({ path: ['fallbacks', 'gpt-4o'], message: 'names a model no deployment serves' });
 * ```
 */
export function formatProblem(problem: ConfigProblem, root = ''): string {
  return `${formatPath(problem.path, root)} ${problem.message}`;
}

/**
 * One line per zod issue, each naming the field path and what is expected.
 *
 * @example
 * ```ts
 * const parsed = schema.safeParse(options);
 * if (!parsed.success) describeIssues(parsed.error, options); // ['deployments is required']
 * ```
 */
export function describeIssues(error: z.ZodError, input: unknown, root = ''): string[] {
  return error.issues.map((issue) => {
    const at = formatPath(issue.path, root);
    if (issue.code === 'unrecognized_keys') {
      const keys = issue.keys.map((k) => `'${k}'`).join(', ');
      return `${at} has unknown key${issue.keys.length > 1 ? 's' : ''} ${keys}: remove or rename ${issue.keys.length > 1 ? 'them' : 'it'}`;
    }
    if (issue.code === 'invalid_type' && valueAt(input, issue.path) === undefined) {
      return `${at} is required`;
    }
    return `${at} ${issue.message}`;
  });
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

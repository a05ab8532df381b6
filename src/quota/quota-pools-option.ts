import { z } from 'zod';
import { clip } from '../errors/clip';
import { formatPath } from '../errors/field-path';
import type { ConfigProblem, DeploymentConfig } from '../types';
import type { PoolLimits } from './pool-level';

const LIMIT = 'must be a non-negative integer (0 = unlimited)';
const limit = z.number({ error: LIMIT }).int({ error: LIMIT }).nonnegative({ error: LIMIT });

/**
 * The zod schema of `SwitchboardOptions.quotaPools`: a level of a quota pool path (`org`,
 * `org/project`) to its limits per minute; the options' schema lists it.
 *
 * @example
 * ```ts
 * quotaPoolsSchema.parse({ org: { tpm: 100_000 } });
 * ```
 */
export const quotaPoolsSchema = z.record(
  z.string({ error: 'must be a quota pool path' }),
  z.strictObject(
    {
      tpm: limit.optional(),
      rpm: limit.optional(),
      itpm: limit.optional(),
      otpm: limit.optional(),
    },
    { error: 'must be the limits of a level, such as { tpm: 100000, rpm: 5000 }' },
  ),
  { error: 'must map a quota pool path to its limits, such as { org: { tpm: 100000 } }' },
);

/** A quota pool path: segments without blanks at their ends, joined by `/`. */
function badPath(path: string): boolean {
  return path.split('/').some((part) => part === '' || part.trim() !== part);
}

/**
 * What is wrong with the levels of quota pool paths: a path that is not one (an empty segment), a
 * level no model's `quotaPool` lies under (its limits would hold nothing), one without a limit,
 * and a level whose models speak to more than one provider (whose rules would count it?).
 *
 * @example
 * ```ts
 * checkPoolLevels(options.deployments, options.quotaPools); // [] when sound
 * ```
 */
export function checkPoolLevels(
  deployments: readonly DeploymentConfig[],
  levels: Readonly<Record<string, PoolLimits>> | undefined,
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const members: { path: string; provider: string; at: PropertyKey[] }[] = [];
  deployments.forEach((d, i) => {
    d.models.forEach((m, j) => {
      if (m.quotaPool === undefined) return;
      const at = ['deployments', i, 'models', j, 'quotaPool'];
      if (badPath(m.quotaPool)) {
        problems.push({
          path: at,
          message: `'${clip(m.quotaPool)}' has an empty or blank-edged level: a quota pool path is names joined by '/', such as 'org/project'`,
        });
      } else members.push({ path: m.quotaPool, provider: d.provider, at });
    });
  });
  for (const [path, limits] of Object.entries(levels ?? {})) {
    const at = ['quotaPools', path];
    const under = members.filter((m) => m.path === path || m.path.startsWith(`${path}/`));
    const first = under[0];
    const other = under.find((m) => m.provider !== first?.provider);
    const message = badPath(path)
      ? "is not a quota pool path: give names joined by '/', such as 'org/project'"
      : first === undefined
        ? `is the level of no model's quotaPool: set quotaPool: '${clip(path)}' (or a path under it, '${clip(path)}/...') on the models that draw on it, or remove it`
        : !Object.values(limits).some((v) => v !== undefined && v > 0)
          ? 'sets no limit: give tpm, rpm, itpm or otpm (or remove the level)'
          : other !== undefined
            ? `holds ${formatPath(first.at)} (${first.provider}) and ${formatPath(other.at)} (${other.provider}): a level belongs to one provider`
            : undefined;
    if (message !== undefined) problems.push({ path: at, message });
  }
  return problems;
}

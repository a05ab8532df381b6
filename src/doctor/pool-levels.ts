import type { SwitchboardOptions } from '../config/switchboard-options';
import type { DoctorCheck, DoctorLimits } from './doctor-row';
import { limitsOf } from './doctor';
import { columns, compareLimits } from './table';

/** One level of a quota pool path, as the doctor lists it. */
interface LevelLine {
  path: string;
  members: string[];
  configured: DoctorLimits;
  reported: DoctorLimits | undefined;
}

/**
 * The levels of the models' quota pool paths under the table: each level (a model's own pool, and
 * every level above it that `quotaPools` limits), the models drawing on it, and its limits as the
 * upstream reports them beside the configured ones. A model's own pool is what its key's headers
 * speak of; no header speaks of a level above it (`?`). Empty when no model names a pool.
 *
 * @example
 * ```ts
 * console.log(formatTable(checks) + formatPoolLevels(options, checks));
 * ```
 */
export function formatPoolLevels(
  options: Pick<SwitchboardOptions, 'deployments' | 'quotaPools'>,
  checks: readonly DoctorCheck[],
): string {
  const levels = new Map<string, LevelLine>();
  const named = options.quotaPools ?? {};
  for (const d of options.deployments) {
    for (const m of d.models) {
      if (m.quotaPool === undefined) continue;
      const check = checks.find((c) => c.row.deployment === d.name && c.row.model === m.name);
      const parts = m.quotaPool.split('/');
      for (let i = 1; i <= parts.length; i++) {
        const path = parts.slice(0, i).join('/');
        const own = i === parts.length;
        if (!own && !Object.hasOwn(named, path)) continue;
        let line = levels.get(path);
        if (line === undefined) {
          line = { path, members: [], configured: {}, reported: undefined };
          levels.set(path, line);
        }
        line.members.push(`${d.name}/${m.name}`);
        // A pool's own limits are its members' (they state the same); a level's, its entry's.
        const entry = Object.hasOwn(named, path) ? named[path] : undefined;
        if (own && line.reported === undefined) line.reported = check?.row.limits;
        line.configured = { ...(own ? limitsOf(m) : {}), ...limitsOf(entry ?? {}) };
      }
    }
  }
  if (levels.size === 0) return '';
  const rows = [...levels.values()]
    .sort((a, b) => (a.path < b.path ? -1 : 1))
    .map((l) => [l.path, l.members.join(', '), compareLimits(l.reported ?? {}, l.configured).text]);
  const header = ['QUOTA POOL', 'DRAWN ON BY', 'LIMITS: UPSTREAM / CONFIG'];
  const line = columns(header, rows, () => 50);
  return ['', '', line(header), ...rows.map(line)].join('\n');
}

import { tenantOf } from '../scheduling/tenant-of';
import type { ConfigProblem } from '../types';
import type { TenantPolicy } from './tenant-options';

/**
 * Mistakes of `options.tenants` that span the configuration, each at its field path: tags that
 * no deployment carries all of (every call of that tenant would fail), and a policy named for a
 * part of a tenant (`a/b`, which `a`'s policy holds, so it would never apply).
 *
 * @example
 * ```ts
 * checkTenants({ 'acme/batch': { tpm: 1000 } }, deployments);
 * // [{ path: ['tenants', 'acme/batch'], message: 'names a part of tenant acme, ...' }]
 * ```
 */
export function checkTenants(
  tenants: Readonly<Record<string, TenantPolicy>> | undefined,
  deployments: readonly { readonly tags?: readonly string[] }[],
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const [id, policy] of Object.entries(tenants ?? {})) {
    const tags = policy.tags ?? [];
    if (tags.length === 0) continue;
    const carried = deployments.some((d) => tags.every((t) => d.tags?.includes(t)));
    if (!carried) {
      problems.push({
        path: ['tenants', id, 'tags'],
        message: `names ${tags.join(', ')}, but no deployment carries ${tags.length === 1 ? 'it' : 'them all'}: every call of this tenant would fail. Tag the deployments that may serve it (deployments[].tags), or correct the tenant's tags`,
      });
    }
  }
  for (const id of Object.keys(tenants ?? {})) {
    const tenant = tenantOf(id);
    if (tenant !== id) {
      problems.push({
        path: ['tenants', id],
        message: `names a part of tenant ${tenant}, whose policy holds it (counted together with ${tenant}): name the policy ${tenant}`,
      });
    }
  }
  return problems;
}

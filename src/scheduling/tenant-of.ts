/**
 * The tenant a tenant id belongs to: the id up to its first `/`. A tenant may name parts of itself
 * (`acme/batch-7`, the gateway's `key-0/<name>`); however many it names, they are one tenant:
 * they wait in its one turn of the queue, and its limits and costs count them together, so naming
 * more parts never takes a larger share of the line or of its limits.
 *
 * @example
 * ```ts
 * tenantOf('key-0/reports'); // 'key-0'
 * tenantOf('acme'); // 'acme'
 * ```
 */
export function tenantOf(tenant: string): string {
  const slash = tenant.indexOf('/');
  // An id that starts with `/` names no tenant before it: it is its own.
  return slash <= 0 ? tenant : tenant.slice(0, slash);
}

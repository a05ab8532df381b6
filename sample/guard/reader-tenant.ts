import { type GatewayKeys } from './gateway-keys';
import { gatewayKeyOf } from './gateway.guard';

/**
 * Whose data a request may read: every tenant's (`undefined`: an admin key, or a gateway without
 * keys, which answers on loopback only), or only the tenant of the key it was let in with (and
 * the parts that key names, `key-<digest>/<part>`).
 *
 * @example
 * ```ts
 * const reader = readerTenant(req, keys); // 'key-3f9a0c4b1d2e', or undefined for an admin key
 * ```
 */
export function readerTenant(req: object, keys: GatewayKeys): string | undefined {
  const key = gatewayKeyOf(req);
  if (key === undefined || keys.isAdmin(key)) return undefined;
  return keys.tenantOf(key);
}

/**
 * Whether the reader tenant `reader` (see {@link readerTenant}) may read `tenant`'s data: its own
 * and its parts only, unless it reads everything (`undefined`).
 *
 * @example
 * ```ts
 * mayRead('key-3f9a0c4b1d2e', 'key-3f9a0c4b1d2e/reports'); // true
 * mayRead('key-3f9a0c4b1d2e', 'other'); // false
 * ```
 */
export function mayRead(reader: string | undefined, tenant: string): boolean {
  return reader === undefined || tenant === reader || tenant.startsWith(`${reader}/`);
}

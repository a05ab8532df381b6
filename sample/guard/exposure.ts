import type { INestApplication } from '@nestjs/common';
import { GatewayKeys } from './gateway-keys';
import { isLoopbackHost } from './host-check';

/**
 * Throws before the gateway listens on `host` when that is beyond loopback and no key is set:
 * the gateway holds every deployment's key, and whoever reaches it would spend their quota.
 *
 * @example
 * ```ts
 * refuseExposureWithoutKeys(app, '0.0.0.0'); // throws unless GATEWAY_API_KEYS is set
 * await app.listen(3000, '0.0.0.0');
 * ```
 */
export function refuseExposureWithoutKeys(app: INestApplication, host: string): void {
  if (isLoopbackHost(host) || app.get(GatewayKeys).size > 0) return;
  throw new Error(
    `Refusing to listen on ${host || 'every interface'} without keys: set GATEWAY_API_KEYS=<key>[,<key>...] ` +
      '(or GATEWAY_API_KEYS_FILE) so that clients must send one, or listen on 127.0.0.1.',
  );
}

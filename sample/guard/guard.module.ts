import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { GatewayKeys, type GuardEnv } from './gateway-keys';
import { GatewayGuard } from './gateway.guard';
import { KeyLimits } from './key-limits';
import { positiveFromEnv } from './key-tenants';
import { ResponseOwners } from './response-owners';

/**
 * The gateway's keys, per-key calls in flight and host check, read from the environment when the
 * application is built (after `.env` files), its {@link GatewayGuard} on every route, and which
 * key made each stored response.
 *
 * @example
 * ```ts
 * @Module({ imports: [GuardModule] })
 * class AppModule {}
 * ```
 */
@Module({
  providers: [
    { provide: GatewayKeys, useFactory: () => GatewayKeys.fromEnv() },
    { provide: KeyLimits, useFactory: () => keyLimitsFromEnv() },
    { provide: APP_GUARD, useClass: GatewayGuard },
    { provide: ResponseOwners, useFactory: () => new ResponseOwners() },
  ],
  exports: [GatewayKeys, ResponseOwners],
})
export class GuardModule {}

/**
 * `GATEWAY_KEY_MAX_IN_FLIGHT`, a positive integer below a million when set. The per-minute limits
 * (`GATEWAY_KEY_RPM`, `GATEWAY_KEY_TPM`) are the switchboard's tenant policies instead (see
 * `keyPolicyFromEnv`), which hold across replicas.
 *
 * @example
 * ```ts
 * keyLimitsFromEnv({ GATEWAY_KEY_MAX_IN_FLIGHT: '4' }).enabled; // true
 * ```
 */
export function keyLimitsFromEnv(env: GuardEnv = process.env): KeyLimits {
  return new KeyLimits({ maxInFlight: positiveFromEnv(env, 'GATEWAY_KEY_MAX_IN_FLIGHT', 6) });
}

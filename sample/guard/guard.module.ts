import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { GatewayKeys, type GuardEnv } from './gateway-keys';
import { GatewayGuard } from './gateway.guard';
import { KeyLimits } from './key-limits';
import { ResponseOwners } from './response-owners';

/**
 * The gateway's keys, per-key limits and host check, read from the environment when the
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

/** `GATEWAY_KEY_RPM` and `GATEWAY_KEY_MAX_IN_FLIGHT`, each a positive integer below a million when set. */
export function keyLimitsFromEnv(env: GuardEnv = process.env): KeyLimits {
  const read = (name: 'GATEWAY_KEY_RPM' | 'GATEWAY_KEY_MAX_IN_FLIGHT'): number | undefined => {
    const raw = env[name]?.trim();
    if (!raw) return undefined;
    // At most six digits: the per-minute limit keeps one time per request of the minute.
    if (!/^[1-9]\d{0,5}$/.test(raw)) {
      throw new Error(
        `${name} must be a positive integer below 1000000, got '${raw.slice(0, 32)}'`,
      );
    }
    return Number(raw);
  };
  return new KeyLimits({
    rpm: read('GATEWAY_KEY_RPM'),
    maxInFlight: read('GATEWAY_KEY_MAX_IN_FLIGHT'),
  });
}

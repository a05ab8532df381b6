import { registerAs, type ConfigType } from '@nestjs/config';
import { loadSwitchboardConfig } from 'nestjs-switchboard';
import { keyPolicyFromEnv } from './guard/key-tenants';

/** The gateway's settings: the `gateway` configuration namespace (read after `.env` files). */
export const gatewayConfig = registerAs('gateway', () => ({
  /** `PORT`, default 3000. */
  port: Number.parseInt(process.env.PORT ?? '', 10) || 3000,
  /** `HOST`, default 127.0.0.1; beyond loopback the gateway starts only with `GATEWAY_API_KEYS`. */
  host: process.env.HOST || '127.0.0.1',
  /**
   * The deployments, read as the `switchboardConfig` namespace reads them: the YAML or JSON file
   * named by `SWITCHBOARD_CONFIG`, else `AZURE_OPENAI_ENDPOINT` + `AZURE_OPENAI_API_KEY` and/or
   * `OPENAI_API_KEY`. Undefined when none is set: the gateway then starts simulated deployments.
   */
  switchboard: loadSwitchboardConfig(),
  /**
   * `REDIS_URL`: the switchboard's state (usage, cooldowns, sessions, tenants' counts) is shared
   * there with every replica configured alike; absent, each process keeps its own.
   */
  redisUrl: process.env.REDIS_URL?.trim() || undefined,
  /**
   * `GATEWAY_KEY_RPM` and `GATEWAY_KEY_TPM`: each key's limits per minute, held by the switchboard
   * as the policy of the key's tenant (with keys only).
   */
  keyPolicy: keyPolicyFromEnv(),
}));

/** What the `gateway` namespace holds. */
export type GatewayConfig = ConfigType<typeof gatewayConfig>;

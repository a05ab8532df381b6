import type { SwitchboardOptions, TenantPolicy } from 'nestjs-switchboard';
import type { GuardEnv } from './gateway-keys';

/** The per-key limits the environment sets, as a tenant policy. */
type KeyPolicy = Pick<TenantPolicy, 'rpm' | 'tpm'>;

/** The tenant a key's calls are counted as (see `keyTenant`; the parts a client names belong to it). */
const KEY_TENANT = /^key-[0-9a-f]{12}$/;

/**
 * A positive integer from `env[name]`, or undefined when it is not set; at most `digits` digits.
 *
 * @example
 * ```ts
 * positiveFromEnv({ GATEWAY_KEY_RPM: '60' }, 'GATEWAY_KEY_RPM', 6); // 60
 * ```
 */
export function positiveFromEnv(env: GuardEnv, name: string, digits: number): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  if (!new RegExp(`^[1-9]\\d{0,${digits - 1}}$`).test(raw)) {
    throw new Error(
      `${name} must be a positive integer below ${10 ** digits}, got '${raw.slice(0, 32)}'`,
    );
  }
  return Number(raw);
}

/**
 * `GATEWAY_KEY_RPM` (model calls per minute) and `GATEWAY_KEY_TPM` (tokens per minute, counted at
 * admission as the upstreams count them) as one key's tenant policy; empty when neither is set.
 *
 * @example
 * ```ts
 * keyPolicyFromEnv({ GATEWAY_KEY_RPM: '60', GATEWAY_KEY_TPM: '20000' }); // { rpm: 60, tpm: 20000 }
 * ```
 */
export function keyPolicyFromEnv(env: GuardEnv = process.env): KeyPolicy {
  const policy: KeyPolicy = {};
  const rpm = positiveFromEnv(env, 'GATEWAY_KEY_RPM', 6);
  const tpm = positiveFromEnv(env, 'GATEWAY_KEY_TPM', 9);
  if (rpm !== undefined) policy.rpm = rpm;
  if (tpm !== undefined) policy.tpm = tpm;
  return policy;
}

/**
 * The switchboard's options with the per-key limits as tenant policies, when the gateway has
 * keys: each key's calls are its tenant's (`keyTenant(key)`, and the parts a client names, which count
 * with it), so the switchboard's `tenants` holds them, across replicas through a shared store.
 * The environment's limits go under `'*'` (every key, each on its own count) and into each
 * policy the configuration file names for a key (`key-3f9a0c4b1d2e: { budget: ... }`); a field the file sets
 * wins. Without keys the options are returned as they are: the limits are per key.
 *
 * @example
 * ```ts
 * withKeyTenants({ deployments, tenants: { 'key-3f9a0c4b1d2e': { budget: { usd: 5, per: 'day' } } } }, { rpm: 60 }, true);
 * // tenants: { '*': { rpm: 60 }, 'key-3f9a0c4b1d2e': { rpm: 60, budget: { usd: 5, per: 'day' } } }
 * ```
 */
export function withKeyTenants(
  options: SwitchboardOptions,
  policy: KeyPolicy,
  keyed: boolean,
): SwitchboardOptions {
  if (!keyed || Object.keys(policy).length === 0) return options;
  const tenants: Record<string, TenantPolicy> = { ...options.tenants };
  tenants['*'] = { ...policy, ...tenants['*'] };
  for (const name of Object.keys(tenants)) {
    if (KEY_TENANT.test(name)) tenants[name] = { ...policy, ...tenants[name] };
  }
  return { ...options, tenants };
}

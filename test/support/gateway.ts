import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SimulatedUpstream } from '../../src/testing';
import { createGateway, type Gateway } from '../../sample/main';

/** The environment variables the gateway reads that a test sets: cleared before, restored after. */
const GATEWAY_ENV = [
  'GATEWAY_API_KEYS',
  'GATEWAY_API_KEYS_FILE',
  'GATEWAY_KEY_RPM',
  'GATEWAY_KEY_TPM',
  'GATEWAY_KEY_MAX_IN_FLIGHT',
  'GATEWAY_ADMIN_KEYS',
  'SWITCHBOARD_CONFIG',
  'REDIS_URL',
];

/**
 * The sample gateway on 127.0.0.1 with `env` as its only gateway settings (whatever the test
 * process has is put back afterwards); on its simulated deployments unless `SWITCHBOARD_CONFIG`
 * names a file; on `options.platform` when given.
 *
 * @example
 * ```ts
 * const gateway = await gatewayWith({ GATEWAY_API_KEYS: 'k1,k2' });
 * ```
 */
export async function gatewayWith(
  env: Record<string, string>,
  options: { platform?: 'express' | 'fastify' } = {},
): Promise<Gateway> {
  const saved = Object.fromEntries(GATEWAY_ENV.map((name) => [name, process.env[name]]));
  for (const name of GATEWAY_ENV) delete process.env[name];
  Object.assign(process.env, env);
  try {
    return await createGateway({
      port: 0,
      host: '127.0.0.1',
      simulation: env.SWITCHBOARD_CONFIG ? undefined : { latencyFactor: 0, chunkDelay: 0 },
      logger: false,
      platform: options.platform,
    });
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

/**
 * Writes, in `dir`, a configuration of one deployment `solo` of `upstream` serving `model` at
 * one request per minute, with a queue that waits ten minutes; returns its path.
 *
 * @example
 * ```ts
 * const gateway = await gatewayWith({ SWITCHBOARD_CONFIG: oneSlowDeployment(dir, upstream, 'gpt-4o-mini') });
 * ```
 */
export function oneSlowDeployment(dir: string, upstream: SimulatedUpstream, model: string): string {
  const file = join(dir, 'switchboard.json');
  writeFileSync(
    file,
    JSON.stringify({
      deployments: [
        {
          provider: 'openai',
          name: 'solo',
          baseURL: upstream.deployment('solo').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: model, rpm: 1 }],
        },
      ],
      queue: { maxWait: 600_000 },
    }),
  );
  return file;
}

import type { ConfigFactory, ConfigFactoryKeyHost, registerAs } from '@nestjs/config';
import { peerRequire } from '../runtime/peer-require';
import { loadSwitchboardConfigFile, type SwitchboardEnv } from './load-config-file';
import type { SwitchboardOptions } from './switchboard-options';
import type { OpenAIConfig } from '../types';
import { SwitchboardConfigError } from './switchboard-config.error';

/**
 * The environment variable that names the configuration file.
 *
 * @example
 * ```sh
 * SWITCHBOARD_CONFIG=config/switchboard.yaml node dist/main.js
 * ```
 */
export const SWITCHBOARD_CONFIG_ENV = 'SWITCHBOARD_CONFIG';

const DEFAULT_MODEL = 'gpt-4o-mini';

/**
 * Switchboard options from the environment, or `undefined` when nothing is configured:
 *
 * - `SWITCHBOARD_CONFIG` names a YAML or JSON file (see {@link loadSwitchboardConfigFile});
 *   when it is set, nothing else is read;
 * - else `AZURE_OPENAI_ENDPOINT` + `AZURE_OPENAI_API_KEY` give an Azure OpenAI deployment `azure`
 *   (base URL `<endpoint>/openai/v1/`, model `AZURE_OPENAI_MODEL`, default `gpt-4o-mini`), and
 *   `OPENAI_API_KEY` an OpenAI deployment `openai` (model `OPENAI_MODEL`, default `gpt-4o-mini`);
 *   with both set, calls are balanced over the two, as the original's example does.
 *
 * @throws {@link SwitchboardConfigError} when what is set is invalid or incomplete.
 *
 * @example
 * ```ts
 * const options = loadSwitchboardConfig() ?? (await simulatedOptions());
 * const sb = createSwitchboard(options);
 * ```
 */
export function loadSwitchboardConfig(
  env: SwitchboardEnv = process.env,
): SwitchboardOptions | undefined {
  const file = env[SWITCHBOARD_CONFIG_ENV];
  if (file !== undefined && file.trim() !== '') return loadSwitchboardConfigFile(file.trim(), env);

  const problems: string[] = [];
  const deployments: OpenAIConfig[] = [];
  const endpoint = nonEmpty(env.AZURE_OPENAI_ENDPOINT);
  const azureKey = nonEmpty(env.AZURE_OPENAI_API_KEY);
  if (endpoint !== undefined || azureKey !== undefined) {
    if (endpoint === undefined) {
      problems.push(
        'environment: AZURE_OPENAI_API_KEY is set but AZURE_OPENAI_ENDPOINT is not: set it to https://<resource>.openai.azure.com',
      );
    } else if (azureKey === undefined) {
      problems.push(
        'environment: AZURE_OPENAI_ENDPOINT is set but AZURE_OPENAI_API_KEY is not: set the key of that resource',
      );
    } else if (!isHttpUrl(endpoint)) {
      problems.push(
        // Not the value: an endpoint variable that is not a URL often holds the key by mistake.
        `environment: AZURE_OPENAI_ENDPOINT must be an http(s) URL such as https://<resource>.openai.azure.com, got a value of ${endpoint.length} characters that is not one (not shown: it may be a key)`,
      );
    } else {
      deployments.push({
        provider: 'openai',
        name: 'azure',
        baseURL: azureBaseURL(endpoint),
        apiKey: azureKey,
        models: [{ name: nonEmpty(env.AZURE_OPENAI_MODEL) ?? DEFAULT_MODEL }],
      });
    }
  }
  const openaiKey = nonEmpty(env.OPENAI_API_KEY);
  if (openaiKey !== undefined) {
    deployments.push({
      provider: 'openai',
      name: 'openai',
      apiKey: openaiKey,
      models: [{ name: nonEmpty(env.OPENAI_MODEL) ?? DEFAULT_MODEL }],
    });
  }
  if (problems.length > 0) throw new SwitchboardConfigError('environment', problems);
  return deployments.length > 0 ? { deployments } : undefined;
}

/**
 * The `switchboard` configuration namespace for `@nestjs/config`: the options
 * {@link loadSwitchboardConfig} reads, loaded when the `ConfigModule` initializes (after `.env`
 * files). Inject it with `switchboardConfig.KEY`, read it with
 * `configService.get('switchboard')`, or pass `switchboardConfig.asProvider()` to
 * `SwitchboardModule.forRootAsync`.
 *
 * @throws {@link SwitchboardConfigError} when the configuration is invalid, or when nothing is
 *   configured at all (the error says which variables to set).
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     ConfigModule.forRoot({ load: [switchboardConfig] }),
 *     SwitchboardModule.forRootAsync({
 *       imports: [ConfigModule],
 *       inject: [switchboardConfig.KEY],
 *       useFactory: (config: ConfigType<typeof switchboardConfig>) => config,
 *     }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 */
export const switchboardConfig = lazyRegisterAs('switchboard', (): SwitchboardOptions => {
  const options = loadSwitchboardConfig();
  if (options === undefined) {
    throw new SwitchboardConfigError('environment', [
      'environment: no switchboard configuration: set SWITCHBOARD_CONFIG to a YAML or JSON file, or AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY, or OPENAI_API_KEY',
    ]);
  }
  return options;
});

/**
 * `registerAs(token, factory)` of `@nestjs/config`, called the first time `ConfigModule` (or the
 * application) reads one of the properties it defines, not at import: standalone applications
 * import this package without having `@nestjs/config` installed.
 */
function lazyRegisterAs<T extends object>(
  token: string,
  factory: () => T,
): ConfigFactory<T> & ConfigFactoryKeyHost<T> {
  // The properties registerAs defines: PARTIAL_CONFIGURATION_KEY, KEY and asProvider.
  const keys = ['PARTIAL_CONFIGURATION_KEY', 'KEY', 'asProvider'];
  let registered = false;
  const register = () => {
    if (registered) return;
    registered = true;
    for (const key of keys) delete (factory as unknown as Record<string, unknown>)[key];
    const config = peerRequire('@nestjs/config') as { registerAs: typeof registerAs };
    config.registerAs(token, factory);
  };
  for (const key of keys) {
    Object.defineProperty(factory, key, {
      configurable: true,
      enumerable: false,
      get: () => {
        register();
        return (factory as unknown as Record<string, unknown>)[key];
      },
    });
  }
  return factory as ConfigFactory<T> & ConfigFactoryKeyHost<T>;
}

/** `https://x.openai.azure.com` -> `https://x.openai.azure.com/openai/v1/` (kept if already there). */
function azureBaseURL(endpoint: string): string {
  const base = endpoint.replace(/\/+$/, '');
  return /\/openai\/v1$/.test(base) ? `${base}/` : `${base}/openai/v1/`;
}

function nonEmpty(value: string | undefined): string | undefined {
  const v = value?.trim();
  return v === undefined || v === '' ? undefined : v;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

import { resolve } from 'node:path';
import type { SwitchboardOptions } from '../config/switchboard-options';
import type { ApiKey } from '../types';
import { scrub } from '../errors/scrub';
import { CredentialSetupError } from './credential-setup.error';

/** The scope Azure OpenAI (and, in Microsoft's own samples, Claude on Foundry) takes tokens for. */
export const COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';

/**
 * Where the doctor takes a token for the deployments that have no key in the file (their token
 * comes from code, as an app's `useFactory` gives Entra ID's): a module of the app's that exports
 * the token function, or `@azure/identity`'s `DefaultAzureCredential`.
 *
 * @example
 * ```ts
 * const source: TokenSource = { entra: true, scope: 'https://ai.azure.com/.default' };
 * ```
 */
export interface TokenSource {
  /** Path of a module exporting `() => Promise<string>` (as `default` or `tokenProvider`). */
  module?: string;
  /** Use `@azure/identity`'s `DefaultAzureCredential` (installed by the app). */
  entra?: boolean;
  /** The scope for `entra`; default {@link COGNITIVE_SERVICES_SCOPE}. */
  scope?: string;
}

/**
 * `options` with a token function for every deployment that has no `apiKey`, from `source`;
 * unchanged when `source` names none.
 *
 * @throws {@link CredentialSetupError} when the module cannot be loaded or exports no function,
 *   or `@azure/identity` is not installed.
 *
 * @example
 * ```ts
 * const withTokens = await withTokenProvider(options, { module: './dist/azure-token.js' });
 * ```
 */
export async function withTokenProvider(
  options: SwitchboardOptions,
  source: TokenSource,
): Promise<SwitchboardOptions> {
  const token = await tokenFunction(source);
  if (token === undefined) return options;
  return {
    ...options,
    deployments: options.deployments.map((d) =>
      d.apiKey === undefined ? { ...d, apiKey: token } : d,
    ),
  };
}

async function tokenFunction(source: TokenSource): Promise<ApiKey | undefined> {
  if (source.module !== undefined) {
    let loaded: Record<string, unknown>;
    try {
      // An absolute path, not a file: URL: the CommonJS build turns import() into require().
      loaded = (await import(resolve(source.module))) as Record<string, unknown>;
    } catch (error) {
      throw new CredentialSetupError(
        `--token ${source.module} could not be loaded: ${scrub(error instanceof Error ? error.message.split('\n')[0] : String(error))}`,
      );
    }
    const fn = [
      loaded.tokenProvider,
      loaded.default,
      (loaded.default as { default?: unknown })?.default,
    ].find((f) => typeof f === 'function');
    if (fn === undefined) {
      throw new CredentialSetupError(
        `--token ${source.module} exports no token function: export default (or export const tokenProvider =) a function returning Promise<string>`,
      );
    }
    return fn as () => Promise<string>;
  }
  if (source.entra === true) {
    let identity: {
      DefaultAzureCredential: new () => unknown;
      getBearerTokenProvider: (credential: unknown, scope: string) => () => Promise<string>;
    };
    try {
      identity = (await import('@azure/identity')) as unknown as typeof identity;
    } catch {
      throw new CredentialSetupError(
        '--entra needs @azure/identity: npm install @azure/identity (or pass --token <module> with your own token function)',
      );
    }
    return identity.getBearerTokenProvider(
      new identity.DefaultAzureCredential(),
      source.scope ?? COGNITIVE_SERVICES_SCOPE,
    );
  }
  return undefined;
}

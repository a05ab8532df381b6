import { TokenProviderError } from '../failover/token-provider.error';
import type { ApiKey } from '../types';
import { hasControlCharacter } from '../runtime/control-characters';

/**
 * A deployment's `apiKey` as its SDK client takes it: a function is wrapped so that its failure
 * (a throw, or no token) is a {@link TokenProviderError} naming the deployment, which the failure
 * classification reads as that deployment's fault. The token itself never goes into a message.
 *
 * @example
 * ```ts
 * new OpenAI({ apiKey: clientKey(config.apiKey, config.name) });
 * ```
 */
export function clientKey(key: ApiKey | undefined, deployment: string): ApiKey | undefined {
  if (typeof key !== 'function') return key;
  return async () => {
    let token: unknown;
    try {
      token = await key();
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      throw new TokenProviderError(deployment, `failed: ${detail}`, { cause: error });
    }
    if (typeof token !== 'string' || token === '') {
      const got = token === '' ? 'an empty string' : typeof token;
      throw new TokenProviderError(deployment, `returned ${got}, not a token`);
    }
    if (hasControlCharacter(token)) {
      throw new TokenProviderError(
        deployment,
        'returned a token holding a control character, which no HTTP header can carry (not shown)',
      );
    }
    return token;
  };
}

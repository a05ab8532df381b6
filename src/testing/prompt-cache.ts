import { createHash, type Hash } from 'node:crypto';

/**
 * How the simulated deployments cache prompt prefixes, per deployment, as Azure OpenAI, OpenAI
 * and Claude do: a prefix is cached from {@link MIN_CACHED_TOKENS} tokens on, and forgotten
 * {@link CACHE_LIFETIME_MS} after it was last used.
 */

/** Prefixes shorter than this are never cached (OpenAI's and Claude Sonnet / Opus's minimum). */
const MIN_CACHED_TOKENS = 1024;
/** OpenAI caches the longest matching prefix in steps of this many tokens beyond the minimum. */
const CACHE_STEP_TOKENS = 128;
/** A cached prefix lives this long after its last use (both vendors' default). */
const CACHE_LIFETIME_MS = 5 * 60_000;
/** The simulator's tokens are four characters each (see `estimateTokens`). */
const CHARS_PER_TOKEN = 4;

/** Prefix key -> when it was last used (epoch ms), oldest first (internal). */
type PromptCache = Map<string, number>;

/** Whether `key` is cached at `now`; a stale entry is dropped. */
function fresh(cache: PromptCache, key: string, now: number): boolean {
  const at = cache.get(key);
  if (at === undefined) return false;
  if (now - at < CACHE_LIFETIME_MS) return true;
  cache.delete(key);
  return false;
}

/** Marks `key` used at `now`, keeping at most `max` entries (the least recently used go). */
export function touchPrefix(cache: PromptCache, key: string, now: number, max: number): void {
  cache.delete(key);
  cache.set(key, now);
  if (cache.size > max) cache.delete(cache.keys().next().value as string);
}

/**
 * Claude's explicit caching: whether the prefix up to the last `cache_control` block (`key`,
 * `tokens` long) is read from the cache (a hit) or written to it; `undefined` when it is too
 * short to be cached at all.
 */
export function explicitPrefix(
  cache: PromptCache,
  key: string,
  tokens: number,
  now: number,
): 'read' | 'write' | undefined {
  if (tokens < MIN_CACHED_TOKENS) return undefined;
  return fresh(cache, key, now) ? 'read' : 'write';
}

/**
 * OpenAI's automatic caching: the prompt's prefixes of 1 024, 1 152, 1 280, ... tokens, each as
 * a key (the model and a hash of the text: the text is not kept); `cachedTokens` is the longest
 * of them the deployment has cached. Write them all with {@link touchPrefix} once the request is
 * admitted.
 *
 * @example
 * ```ts
 * const { cachedTokens, keys } = automaticPrefixes(cache, 'gpt-4o', prompt, clock());
 * ```
 */
export function automaticPrefixes(
  cache: PromptCache,
  model: string,
  prompt: string,
  now: number,
): { cachedTokens: number; keys: string[] } {
  const tokens = Math.floor(prompt.length / CHARS_PER_TOKEN);
  if (tokens < MIN_CACHED_TOKENS) return { cachedTokens: 0, keys: [] };
  const keys: string[] = [];
  let cachedTokens = 0;
  const hash: Hash = createHash('sha256').update(model).update('\u0000');
  let done = 0;
  // Prefixes nest: once one is missing, no longer one can be there.
  let matching = true;
  for (let n = MIN_CACHED_TOKENS; n <= tokens; n += CACHE_STEP_TOKENS) {
    const end = n * CHARS_PER_TOKEN;
    hash.update(prompt.slice(done, end));
    done = end;
    const key = `auto:${hash.copy().digest('base64')}`;
    keys.push(key);
    if (matching && fresh(cache, key, now)) cachedTokens = n;
    else matching = false;
  }
  return { cachedTokens, keys };
}

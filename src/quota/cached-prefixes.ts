/**
 * Which prompt prefixes Claude has cached on one deployment: a call whose prefix is cached there
 * reads it from the cache, and cache reads do not count toward input tokens per minute. Learned
 * from answers (`cache_read_input_tokens`, `cache_creation_input_tokens`), each kept for the
 * cache's lifetime after its last use, as the upstream keeps it.
 */

/** A cached prefix lives this long after its last use (Anthropic's default, "5 minutes"). */
const PREFIX_LIFETIME_MS = 5 * 60_000;
/** Prefixes remembered per deployment and model; the least recently used go first. */
const MAX_PREFIXES = 1_000;

/**
 * The prompt prefix a call asks to cache: a hash of its text up to the last `cache_control`
 * breakpoint (never the text), and its estimated size in tokens.
 *
 * @example
 * ```ts
 * const prefix: CachePrefix = { key: 'cache:3f9a…', tokens: 50_000 };
 * ```
 */
export interface CachePrefix {
  key: string;
  tokens: number;
}

/**
 * The prefixes cached on one deployment for one model, with their size as answers reported it.
 *
 * @example
 * ```ts
 * const cached = new CachedPrefixes();
 * cached.used(prefix, 50_000, now);
 * cached.tokensOf(prefix, now + 60_000); // 50 000: read from the cache, free of ITPM
 * ```
 */
export class CachedPrefixes {
  /** Key -> [tokens, last use], least recently used first. */
  private readonly prefixes = new Map<string, [number, number]>();

  /** Tokens of `prefix` cached at `now` (0 when it is not, or no longer). */
  tokensOf(prefix: CachePrefix, now: number): number {
    const entry = this.prefixes.get(prefix.key);
    if (entry === undefined) return 0;
    if (now - entry[1] < PREFIX_LIFETIME_MS) return entry[0];
    this.prefixes.delete(prefix.key);
    return 0;
  }

  /** An answer read or wrote `tokens` of `prefix` at `now`: it is cached from now on. */
  used(prefix: CachePrefix, tokens: number, now: number): void {
    this.prefixes.delete(prefix.key);
    this.prefixes.set(prefix.key, [tokens, now]);
    if (this.prefixes.size > MAX_PREFIXES) {
      this.prefixes.delete(this.prefixes.keys().next().value as string);
    }
  }

  reset(): void {
    this.prefixes.clear();
  }
}

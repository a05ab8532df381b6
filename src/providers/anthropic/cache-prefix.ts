import { createHash, type Hash } from 'node:crypto';

import type { CachePrefix } from '../../quota/cached-prefixes';

/** Text of a `system` or message `content` value, block by block, with its cache breakpoints. */
function eachBlock(content: unknown, take: (text: string, breakpoint: boolean) => void): void {
  if (typeof content === 'string') {
    take(content, false);
    return;
  }
  if (!Array.isArray(content)) return;
  for (const block of content) {
    if (block === null || typeof block !== 'object') continue;
    const { text, cache_control: mark } = block as { text?: unknown; cache_control?: unknown };
    take(typeof text === 'string' ? text : '', mark !== undefined && mark !== null);
  }
}

/**
 * The prompt prefix a Messages call asks Claude to cache: the system prompt and messages up to
 * the last block marked `cache_control` (Anthropic caches "the entire prompt up to and including
 * the block designated with cache_control"), as a hash of that text (never the text itself) and
 * its size at four characters a token; `undefined` when no block is marked.
 *
 * @example
 * ```ts
 * cachePrefixOf({ system: [{ type: 'text', text: handbook, cache_control: { type: 'ephemeral' } }], messages });
 * // { key: 'cache:3f9a…', tokens: 50_000 }
 * ```
 */
export function cachePrefixOf(body: Readonly<Record<string, unknown>>): CachePrefix | undefined {
  // Most calls mark nothing: they pay for one look at each block, not for hashing the prompt.
  if (!marksAny(body)) return undefined;
  const hash: Hash = createHash('sha256');
  let chars = 0;
  let prefix: CachePrefix | undefined;
  const take = (text: string, breakpoint: boolean): void => {
    hash.update(text, 'utf8');
    chars += text.length;
    // A separator keeps blocks apart: "ab" + "c" is not "a" + "bc".
    hash.update('\u0000');
    if (breakpoint) {
      prefix = {
        key: `cache:${hash.copy().digest('hex').slice(0, 32)}`,
        tokens: Math.ceil(chars / 4),
      };
    }
  };
  eachBlock(body.system, take);
  if (Array.isArray(body.messages)) {
    for (const message of body.messages) {
      if (message !== null && typeof message === 'object') {
        eachBlock((message as { content?: unknown }).content, take);
      }
    }
  }
  return prefix;
}

/** Whether a block of the system prompt or of a message carries a `cache_control` mark. */
function marksAny(body: Readonly<Record<string, unknown>>): boolean {
  let marked = false;
  const take = (_text: string, breakpoint: boolean): void => {
    if (breakpoint) marked = true;
  };
  eachBlock(body.system, take);
  if (!marked && Array.isArray(body.messages)) {
    for (const message of body.messages) {
      if (message !== null && typeof message === 'object') {
        eachBlock((message as { content?: unknown }).content, take);
        if (marked) break;
      }
    }
  }
  return marked;
}

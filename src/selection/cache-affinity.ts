import { createHash } from 'node:crypto';

/**
 * Prompts shorter than this (estimated) are not cached upstream: Azure OpenAI, OpenAI and Claude
 * cache prefixes of 1 024 tokens or more.
 */
export const CACHEABLE_TOKENS = 1_024;
/** How much of a prompt's start is hashed: 1 024 tokens at four characters each. */
const PREFIX_CHARS = CACHEABLE_TOKENS * 4;

/**
 * The key under which a call's cacheable prompt prefix is remembered with the deployment that
 * served it, as a session is: `prompt_cache_key` when the call sets one; else, for a prompt of at
 * least {@link CACHEABLE_TOKENS} (`estimatedInput`, the admission estimate), a hash of the model
 * and the first 4 096 characters of its system prompt (or `instructions`) and leading messages,
 * up to the end of the first block marked `cache_control` when one ends before that. Calls
 * sharing those characters share a cached prefix upstream, whatever follows; within a `tenant`,
 * when the call names one (tenants never share a key). `undefined` when nothing in the call can
 * be cached. Only the hash is kept, never the text.
 *
 * @example
 * ```ts
 * prefixKey({ model: 'gpt-4o', messages: [{ role: 'system', content: handbook }, question] }, 1_400);
 * // 'prefix:3f9a…' (the same for every question after that handbook)
 * ```
 */
export function prefixKey(
  body: Record<string, unknown>,
  estimatedInput: number,
  tenant?: string,
): string | undefined {
  const named = body.prompt_cache_key;
  if (typeof named === 'string' && named !== '') {
    return `prefix:${digest(`${tenantSpace(tenant)}key\u0000${String(body.model)}\u0000${named}`)}`;
  }
  // Most calls: too short to be cached, nothing else to read.
  if (estimatedInput < CACHEABLE_TOKENS) return undefined;
  const start = new PromptStart();
  start.take(body.system);
  start.take(body.instructions);
  for (const list of [body.messages, body.input]) {
    if (typeof list === 'string') start.take(list);
    else if (Array.isArray(list)) {
      for (const item of list) {
        if (start.full) break;
        start.take(typeof item === 'object' && item !== null ? (item as Item).content : item);
      }
    }
  }
  if (start.text.length === 0) return undefined;
  return `prefix:${digest(`${tenantSpace(tenant)}text\u0000${String(body.model)}\u0000${start.text}`)}`;
}

/**
 * Each tenant's prefixes are its own: a placement shared across tenants would tell one of them
 * (by the cached tokens of its answer) whether another recently sent a prompt it guessed.
 */
function tenantSpace(tenant: string | undefined): string {
  return tenant === undefined || tenant === '' ? '' : `${JSON.stringify(tenant)}\u0000`;
}

interface Item {
  content?: unknown;
}

/** The first {@link PREFIX_CHARS} characters of a prompt, gathered part by part. */
class PromptStart {
  text = '';
  /** Enough is gathered, or a `cache_control` mark ended the cached prefix. */
  full = false;

  take(content: unknown): void {
    if (this.full || content === undefined || content === null) return;
    if (typeof content === 'string') {
      this.add(content);
      return;
    }
    if (!Array.isArray(content)) return;
    for (const block of content) {
      if (this.full) return;
      if (typeof block === 'string') this.add(block);
      else if (typeof block === 'object' && block !== null) {
        const { text, cache_control: mark } = block as { text?: unknown; cache_control?: unknown };
        if (typeof text === 'string') this.add(text);
        // The caller says where the cached prefix ends.
        if (mark !== undefined && mark !== null) this.full = true;
      }
    }
  }

  private add(part: string): void {
    const room = PREFIX_CHARS - this.text.length;
    this.text += part.length > room ? part.slice(0, room) : part;
    if (this.text.length >= PREFIX_CHARS) this.full = true;
  }
}

function digest(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 32);
}

/**
 * Characters of text in a message list, for the preflight token estimate (chars / 4). Reads string
 * content and the `text` of content parts; images, audio and tool payloads are not counted.
 */
export function textLength(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let n = 0;
  for (const m of messages) {
    if (m !== null && typeof m === 'object')
      n += contentLength((m as { content?: unknown }).content);
  }
  return n;
}

/** Characters of a `content` (or `system`) field: a string or a list of parts with `text`. */
export function contentLength(content: unknown): number {
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) {
    const text =
      part !== null && typeof part === 'object' ? (part as { text?: unknown }).text : undefined;
    if (typeof text === 'string') n += text.length;
  }
  return n;
}

/**
 * Characters of text in a Responses or embeddings `input`: a string, a list of strings, token
 * arrays (a token counts as 4 characters, so chars / 4 gives it back), or input items with a
 * `content` or `output`.
 */
export function inputLength(input: unknown): number {
  if (typeof input === 'string') return input.length;
  if (!Array.isArray(input)) return 0;
  let n = 0;
  for (const item of input) {
    if (typeof item === 'string') n += item.length;
    else if (typeof item === 'number') n += 4;
    else if (Array.isArray(item)) n += inputLength(item);
    else if (item !== null && typeof item === 'object') {
      const { content, output } = item as { content?: unknown; output?: unknown };
      n += contentLength(content);
      if (typeof output === 'string') n += output.length;
    }
  }
  return n;
}

/** A non-negative token count from a request field, 0 when absent or not a number. */
export function tokenField(value: unknown): number {
  return typeof value === 'number' && value > 0 ? value : 0;
}

/**
 * The output cap a call sets: `max_completion_tokens`, else `max_tokens`; `undefined` when it sets
 * neither (or sets something that is not a positive number).
 *
 * @example
 * ```ts
 * outputCap({ max_completion_tokens: 64, max_tokens: 256 }); // 64
 * ```
 */
export function outputCap(body: Readonly<Record<string, unknown>>): number | undefined {
  return tokenField(body.max_completion_tokens ?? body.max_tokens) || undefined;
}

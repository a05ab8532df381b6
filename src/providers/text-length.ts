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

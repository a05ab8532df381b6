/**
 * What a prompt's tool schemas and images weigh, counted as the vendors document it, for the
 * admission estimate: quota, tenant limits and budgets all read it.
 *
 * - Tool schemas (`tools`, `functions`, a `json_schema` response format) are sent to the model
 *   as text: their JSON counts as text (characters / 4).
 * - OpenAI images (the "Calculating costs" section of OpenAI's vision guide): `detail: 'low'` is
 *   the base; otherwise the image is scaled to fit 2048 × 2048, then its shortest side to 768,
 *   and each 512-px tile adds a tile's tokens: gpt-4o and the like 85 + 170 a tile, gpt-4o-mini
 *   2 833 + 5 667 a tile. An image whose size cannot be read from its bytes (a URL) is counted
 *   at the most tiles an image can take (8).
 * - Claude images (Anthropic's vision guide): width × height / 750 tokens, at most about 1 600
 *   (larger images are scaled down first); an unreadable size counts 1 600.
 */

/**
 * Tokens of the system prompt Claude adds to a request with tools (Anthropic's tool-use pricing
 * table: 346 with `tool_choice` auto or none, the most of any choice).
 */
export const TOOL_USE_PROMPT = 346;

/** The most 512-px tiles one image takes after OpenAI's scaling (768 × 2048). */
const MAX_TILES = 8;
const CLAUDE_MAX_IMAGE_TOKENS = 1_600;

/** Characters of the tool schemas a request sends, which the model reads as text. */
export function schemaLength(body: Readonly<Record<string, unknown>>): number {
  // Each field read by name: a list of the two names to loop over was an array made per call.
  let n = listLength(body.tools) + listLength(body.functions);
  const format = body.response_format as { type?: unknown; json_schema?: unknown } | undefined;
  if (format?.type === 'json_schema' && format.json_schema !== undefined) {
    n += JSON.stringify(format.json_schema).length;
  }
  return n;
}

/** Characters of a non-empty list's JSON; 0 for anything else. */
function listLength(value: unknown): number {
  return Array.isArray(value) && value.length > 0 ? JSON.stringify(value).length : 0;
}

/** Tokens of the images in an OpenAI message list, for `model`. */
export function openaiImageTokens(messages: unknown, model: unknown): number {
  if (!Array.isArray(messages)) return 0;
  const mini = typeof model === 'string' && model.startsWith('gpt-4o-mini');
  const base = mini ? 2_833 : 85;
  const tile = mini ? 5_667 : 170;
  let tokens = 0;
  for (const m of messages) {
    const content = (m as { content?: unknown } | null)?.content;
    if (!Array.isArray(content)) continue;
    for (const part of content) {
      const image = (part as { type?: unknown; image_url?: unknown } | null)?.image_url;
      if ((part as { type?: unknown }).type !== 'image_url' || image == null) continue;
      const { url, detail } = image as { url?: unknown; detail?: unknown };
      if (detail === 'low') tokens += base;
      else tokens += base + tile * tilesOf(typeof url === 'string' ? imageSize(url) : undefined);
    }
  }
  return tokens;
}

/** Tokens of the images in a Claude message list. */
export function claudeImageTokens(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let tokens = 0;
  for (const m of messages) {
    const content = (m as { content?: unknown } | null)?.content;
    if (!Array.isArray(content)) continue;
    for (const part of content) {
      if ((part as { type?: unknown } | null)?.type !== 'image') continue;
      const source = (part as { source?: { type?: unknown; data?: unknown } }).source;
      const size =
        source?.type === 'base64' && typeof source.data === 'string'
          ? sizeOfBytes(source.data)
          : undefined;
      tokens +=
        size === undefined
          ? CLAUDE_MAX_IMAGE_TOKENS
          : Math.min(CLAUDE_MAX_IMAGE_TOKENS, Math.ceil((size.width * size.height) / 750));
    }
  }
  return tokens;
}

/** OpenAI's 512-px tiles of an image of `size` (unknown: the most there can be). */
function tilesOf(size: { width: number; height: number } | undefined): number {
  if (size === undefined || size.width <= 0 || size.height <= 0) return MAX_TILES;
  let { width: w, height: h } = size;
  const fit = Math.min(1, 2048 / Math.max(w, h));
  w *= fit;
  h *= fit;
  const shortest = Math.min(w, h);
  if (shortest > 768) {
    w *= 768 / shortest;
    h *= 768 / shortest;
  }
  return Math.min(MAX_TILES, Math.ceil(w / 512) * Math.ceil(h / 512));
}

/** The size of a `data:` URL's PNG or GIF image, read from its header; else `undefined`. */
function imageSize(url: string): { width: number; height: number } | undefined {
  if (!url.startsWith('data:')) return undefined;
  const comma = url.indexOf(',');
  return comma < 0 ? undefined : sizeOfBytes(url.slice(comma + 1, comma + 1 + 64));
}

/** The size in the header of base64 PNG or GIF bytes; `undefined` for any other. */
function sizeOfBytes(base64: string): { width: number; height: number } | undefined {
  const head = Buffer.from(base64.slice(0, 64), 'base64');
  if (head.length >= 24 && head.readUInt32BE(0) === 0x89504e47) {
    return { width: head.readUInt32BE(16), height: head.readUInt32BE(20) };
  }
  if (head.length >= 10 && head.toString('latin1', 0, 3) === 'GIF') {
    return { width: head.readUInt16LE(6), height: head.readUInt16LE(8) };
  }
  return undefined;
}

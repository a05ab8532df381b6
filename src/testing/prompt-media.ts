/**
 * The prompt tokens an OpenAI upstream bills beyond message text, by its documents: tool
 * definitions (and a JSON-schema response format) are read by the model as text, and each image
 * is billed by OpenAI's vision guide: `detail: 'low'` a flat base; else scaled into 2048 × 2048,
 * then its short side to 768, plus a tile's tokens per 512-px tile (gpt-4o-mini: base 2 833,
 * tile 5 667; other models: 85 and 170). The simulator reads an image's size from a PNG `data:`
 * URL; an image it cannot measure (a link it does not fetch) counts as 768 × 2048.
 */

/** Characters of the request's tool definitions and JSON-schema response format. */
export function toolChars(body: Record<string, unknown>): number {
  const parts: unknown[] = [];
  if (Array.isArray(body['tools']) && body['tools'].length > 0) parts.push(body['tools']);
  if (Array.isArray(body['functions']) && body['functions'].length > 0) {
    parts.push(body['functions']);
  }
  const format = body['response_format'];
  if (typeof format === 'object' && format !== null) {
    const f = format as Record<string, unknown>;
    if (f['type'] === 'json_schema' && f['json_schema'] !== undefined) parts.push(f['json_schema']);
  }
  return parts.reduce<number>((n, p) => n + JSON.stringify(p).length, 0);
}

/** Image tokens of a chat request's messages for `model`. */
export function imageTokens(messages: readonly unknown[], model: string): number {
  const [base, perTile] = model.startsWith('gpt-4o-mini') ? [2_833, 5_667] : [85, 170];
  let total = 0;
  for (const message of messages) {
    const content = (message as { content?: unknown }).content;
    if (!Array.isArray(content)) continue;
    for (const part of content as {
      type?: unknown;
      image_url?: { url?: unknown; detail?: unknown };
    }[]) {
      if (part?.type !== 'image_url') continue;
      if (part.image_url?.detail === 'low') {
        total += base;
        continue;
      }
      const [w, h] = pngSize(part.image_url?.url) ?? [768, 2048];
      const scale = Math.min(1, 2048 / w, 2048 / h);
      const short = Math.min(w, h) * scale;
      const fit = short > 768 ? (768 / short) * scale : scale;
      total += base + perTile * Math.ceil((w * fit) / 512) * Math.ceil((h * fit) / 512);
    }
  }
  return total;
}

function pngSize(url: unknown): [number, number] | undefined {
  if (typeof url !== 'string' || !url.startsWith('data:image/png;base64,')) return undefined;
  const bytes = Buffer.from(url.slice('data:image/png;base64,'.length, 64 + 22), 'base64');
  return bytes.length >= 24 ? [bytes.readUInt32BE(16), bytes.readUInt32BE(20)] : undefined;
}

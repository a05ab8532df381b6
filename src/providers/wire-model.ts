import type { ModelConfig } from '../types';

/**
 * The models whose upstream name (`deployment`) differs from the name callers use, as
 * caller's name -> upstream name; `undefined` when none does, so such clients stay plain.
 *
 * @example
 * ```ts
 * wireNames([{ name: 'gpt-4o', deployment: 'gpt4o-east' }]); // Map { 'gpt-4o' => 'gpt4o-east' }
 * ```
 */
export function wireNames(models: readonly ModelConfig[]): ReadonlyMap<string, string> | undefined {
  const names = new Map<string, string>();
  for (const m of models) {
    if (m.deployment !== undefined && m.deployment !== m.name) names.set(m.name, m.deployment);
  }
  return names.size > 0 ? names : undefined;
}

/** The part of an SDK request's options that {@link toWire} reads and replaces. */
export interface WireOptions {
  body?: unknown;
}

/**
 * The one place where a request's `model` becomes the upstream's name for it: the SDK clients
 * call it on every request's options just before the request is built (their `prepareOptions`
 * hook), for every API surface alike. The caller's body is never changed: an attempt on another
 * deployment sends the same body under that deployment's name.
 *
 * @example
 * ```ts
 * toWire({ body: { model: 'gpt-4o', messages } }, names); // body.model is now 'gpt4o-east'
 * ```
 */
export function toWire(options: WireOptions, names: ReadonlyMap<string, string>): void {
  const body = options.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const model = (body as { model?: unknown }).model;
  if (typeof model !== 'string') return;
  const wire = names.get(model);
  if (wire !== undefined) options.body = { ...body, model: wire };
}

/**
 * Whether `client` sends `model` under the upstream's own name (a client made with
 * {@link wireNames}): a body already serialized by someone else would then carry the wrong name.
 *
 * @example
 * ```ts
 * const payload = renamesModel(client, body.model) ? body : clientBytes;
 * ```
 */
export function renamesModel(client: unknown, model: unknown): boolean {
  const names = (client as { wireNames?: ReadonlyMap<string, string> } | null)?.wireNames;
  return typeof model === 'string' && names instanceof Map && names.has(model);
}

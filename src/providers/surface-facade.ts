import type { Surface } from './adapter';

/**
 * What every surface object a caller holds (`sb.chat.completions`, `sb.responses`, `sb.messages`)
 * answers alike: `create` and `parse`, as balanced calls of the surface. Its methods are the
 * prototype's, shared by every switchboard (as the SDKs' own resources are), so code optimized for
 * one switchboard's calls serves the next one's; each surface adds its own helpers.
 *
 * @example
 * ```ts
 * class MessagesFacade extends SurfaceFacade {
 *   countTokens(body: unknown) { return this.surface.call('countTokens', body); }
 * }
 * ```
 */
export class SurfaceFacade {
  constructor(protected readonly surface: Surface) {}

  create(body: unknown, options?: unknown): Promise<unknown> {
    return this.surface.call('create', body, options);
  }

  parse(body: unknown, options?: unknown): Promise<unknown> {
    return this.surface.call('parse', body, options);
  }
}

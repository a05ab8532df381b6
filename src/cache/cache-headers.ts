/**
 * Whether a request's headers turn the response cache off for it: `cache-control: no-store`
 * (as HTTP caches read it), or `x-switchboard-cache: off`.
 *
 * @example
 * ```ts
 * cacheOffByHeaders((name) => request.headers.get(name)); // true for cache-control: no-store
 * ```
 */
export function cacheOffByHeaders(header: (name: string) => string | null | undefined): boolean {
  if (header('x-switchboard-cache')?.trim().toLowerCase() === 'off') return true;
  const control = header('cache-control');
  return control != null && /(^|,)\s*no-store\s*(,|$)/i.test(control);
}

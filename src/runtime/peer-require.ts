/**
 * @internal Node's `require`, for optional peers loaded only when a feature needs them (ioredis,
 * `@nestjs/core`, `@nestjs/config`). This is the CommonJS build's; the ESM build ships
 * `createRequire(import.meta.url)` in its place (see scripts/build.mjs), since ES modules have no
 * `require`. Packages that are ESM only (Nest 12) load through Node's require(esm), which returns
 * the same module instance the application imported.
 *
 * @example
 * ```ts
 * const { Redis } = peerRequire('ioredis') as { Redis: RedisConstructor };
 * ```
 */
export const peerRequire: NodeJS.Require = require;

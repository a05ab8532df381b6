/**
 * Preloaded into a child `node -r ./test/support/ts-register.js -r ./test/sample/resolve-sources.ts
 * sample/main.ts`: resolves `nestjs-switchboard` to the sources, as Jest's moduleNameMapper does,
 * so that the gateway's own entry point runs without a build.
 */
import Module from 'node:module';
import { join } from 'node:path';

const ROOT = join(__dirname, '../..');
const TARGETS: Record<string, string> = {
  'nestjs-switchboard': join(ROOT, 'src/index.ts'),
  'nestjs-switchboard/extend': join(ROOT, 'src/extend/index.ts'),
  'nestjs-switchboard/testing': join(ROOT, 'src/testing/index.ts'),
};
type Resolve = (request: string, ...rest: unknown[]) => string;
const patched = Module as unknown as { _resolveFilename: Resolve };
const original = patched._resolveFilename;
patched._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]): string {
  return original.call(this, TARGETS[request] ?? request, ...rest);
};

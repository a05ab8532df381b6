// Jest's transformer of the TypeScript sources: `ts-transpile.js`, whose cache the child
// processes that specs start read too (they load the same modules through `ts-register.js`).
// Jest takes the source map from the output, where it is inline.
//
//   jest.config.js: transform: { '^.+\\.ts$': '<rootDir>/test/support/ts-transform.js' }
'use strict';
const { cacheKey, transpile } = require('./ts-transpile');

module.exports = {
  process(source, filename) {
    return { code: transpile(filename, source) };
  },
  // Jest keeps transformed files in a cache of its own too: its key must change when the output
  // would (the compiler's version, tsconfig.json), not only with the file and Jest's config.
  getCacheKey(source, filename, options) {
    return `${cacheKey(filename, source)}:${filename}:${options.configString}`;
  },
};

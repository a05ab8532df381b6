// Jest's transformer of the TypeScript sources: `ts-transpile.js`, whose cache the child
// processes that specs start read too (they load the same modules through `ts-register.js`).
// Jest takes the source map from the output, where it is inline.
//
//   jest.config.js: transform: { '^.+\\.ts$': '<rootDir>/test/support/ts-transform.js' }
'use strict';
const { transpile } = require('./ts-transpile');

module.exports = {
  process(source, filename) {
    return { code: transpile(filename, source) };
  },
};

// Runs the TypeScript sources in the child processes and worker threads that specs start
// (`node -r ./test/support/ts-register.js x.ts`), as `ts-node/register/transpile-only` would, but
// keeps what it transpiles on disk (`ts-transpile.js`, whose cache the Jest workers fill and read
// too). Transpiling the import graph of the switchboard, Nest and the sample gateway file by file
// is most of such a child's start (seconds of CPU each time); the specs start several children
// over the same sources, and a run after an unchanged checkout starts them all again.
//
//   const child = spawn(process.execPath, ['-r', join(root, 'test/support/ts-register.js'), file]);
'use strict';
const { readFileSync } = require('node:fs');
const Module = require('node:module');
const { transpile } = require('./ts-transpile');

process.setSourceMapsEnabled(true);
Module._extensions['.ts'] = function (module, filename) {
  module._compile(transpile(filename, readFileSync(filename, 'utf8')), filename);
};

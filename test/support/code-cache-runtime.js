// Jest's own runtime, with V8's code cache kept for the modules it compiles. Jest gives every spec
// file a fresh module registry, so each file compiles again, from source, every module it loads:
// the switchboard, Nest, both SDKs, zod... A worker runs dozens of spec files over the same
// modules, and compiling them was a fifth of the tests' CPU. V8 can instead take the code it
// compiled for a source once (`cachedData`) and skip parsing it again; it checks the source and
// its own flags, and compiles afresh where they differ. Nothing of a module's state is shared: the
// cache holds compiled code, and every spec file still evaluates its modules in its own context.
//
//   jest.config.js: runtime: '<rootDir>/test/support/code-cache-runtime.js'
'use strict';
const vm = require('node:vm');

const compileFunction = vm.compileFunction;
/** By file name: the source compiled and V8's cache of it (one worker's; never written out). */
const cache = new Map();

// jest-runtime calls `vm.compileFunction` through the module object at each compile.
vm.compileFunction = function compileWithCache(code, params, options) {
  const filename = options?.filename;
  if (filename === undefined || options.cachedData !== undefined) {
    return compileFunction.call(this, code, params, options);
  }
  const hit = cache.get(filename);
  if (hit !== undefined && hit.code === code) {
    const fn = compileFunction.call(this, code, params, { ...options, cachedData: hit.data });
    if (fn.cachedDataRejected) cache.delete(filename);
    return fn;
  }
  const fn = compileFunction.call(this, code, params, { ...options, produceCachedData: true });
  if (fn.cachedDataProduced) cache.set(filename, { code, data: fn.cachedData });
  return fn;
};

module.exports = require('jest-runtime');

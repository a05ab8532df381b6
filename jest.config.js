/** @type {import('jest').Config} */
module.exports = {
  // Jest's Node environment, which lets go of each spec file's code when the file is done.
  testEnvironment: '<rootDir>/test/support/node-environment.js',
  roots: ['<rootDir>/test', '<rootDir>/src'],
  testMatch: ['**/*.spec.ts'],
  // Both cores: specs that start servers take free ports (port 0, or Redis below the ephemeral
  // range), temporary directories of their own, and nothing global.
  maxWorkers: 2,
  testSequencer: '<rootDir>/test/support/longest-first.js',
  // Jest's runtime, keeping V8's compiled code of each module for the next spec file of the same
  // worker: compiling the same modules again for every file was a fifth of the tests' CPU.
  runtime: '<rootDir>/test/support/code-cache-runtime.js',
  transform: {
    // tsconfig.json sets isolatedModules: the sources are transpiled file by file, into a cache
    // on disk that the child processes specs start share (on a fresh machine, each file is
    // transpiled once for all of them), and the types are checked once for the whole project by
    // `npm run typecheck` (part of `npm run lint`), not again in each worker for each spec.
    '^.+\\.ts$': '<rootDir>/test/support/ts-transform.js',
  },
  moduleNameMapper: {
    '^nestjs-switchboard$': '<rootDir>/src/index.ts',
    '^nestjs-switchboard/testing$': '<rootDir>/src/testing/index.ts',
    '^nestjs-switchboard/extend$': '<rootDir>/src/extend/index.ts',
  },
  setupFiles: ['<rootDir>/test/support/quiet-logs.ts'],
  testTimeout: 30000,
};

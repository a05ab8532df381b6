/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test', '<rootDir>/src'],
  testMatch: ['**/*.spec.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: false }],
  },
  moduleNameMapper: {
    '^nestjs-switchboard$': '<rootDir>/src/index.ts',
    '^nestjs-switchboard/testing$': '<rootDir>/src/testing/index.ts',
  },
  setupFiles: ['<rootDir>/test/support/quiet-logs.ts'],
  testTimeout: 30000,
};

// Jest's Node environment, letting go of each spec file's code once its results are made.
//
// Jest runs every test and hook inside an AsyncLocalStorage whose store names the test (and its
// hook and describe block), and Node keeps that store on every async resource made meanwhile.
// Some of those resources outlive the spec file in the worker's process: in a heap snapshot, web
// streams and a DNS channel that Node's own cleanup queue keeps reachable. Through the store,
// each held the test's function and its captured stack, so the whole spec file's module registry
// (the switchboard, Nest, both SDKs: some 9 MB a file) stayed alive; a worker's heap grew to
// 1.7 GB over a run, and every full collection walked all of it. Once the file's results are
// made, nothing reads those fields again: they are dropped, and the registry goes with the file.
//
//   jest.config.js: testEnvironment: '<rootDir>/test/support/node-environment.js'
'use strict';
const { TestEnvironment } = require('jest-environment-node');

/** Drops what ties a finished describe block's tests and hooks to the spec file's code. */
function forget(block) {
  for (const hook of block.hooks) {
    hook.fn = undefined;
    hook.asyncError = undefined;
  }
  for (const child of block.children) {
    if (child.type === 'test') {
      child.fn = undefined;
      child.asyncError = undefined;
      child.errors = [];
      child.unhandledRejectionErrorByPromise?.clear();
    } else {
      forget(child);
    }
  }
}

class NodeEnvironment extends TestEnvironment {
  /** jest-circus's state of this file's run, as its first event hands it over. */
  circus = undefined;

  handleTestEvent(event, state) {
    if (event.name === 'setup') this.circus = state;
  }

  async teardown() {
    // The results were made from the state before the environment is torn down.
    if (this.circus !== undefined) forget(this.circus.rootDescribeBlock);
    this.circus = undefined;
    await super.teardown();
  }
}

module.exports = NodeEnvironment;

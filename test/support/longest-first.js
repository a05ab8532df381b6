// Jest's order of spec files, with the few that take longest first: on two workers, a long spec
// that starts last is the tail of the whole run. Jest's own order (failed first, then by the
// durations it cached, else by file size) decides the rest; on a fresh clone it has no durations.
const Sequencer = require('@jest/test-sequencer').default;

const LONGEST = [
  'test/reliability/load.spec.ts',
  'test/sample/gateway-guard.spec.ts',
  'test/readme/readme-blocks.spec.ts',
  'test/browser/status-page.spec.ts',
  'test/sample/gateway-exposure.spec.ts',
];

class LongestFirst extends Sequencer {
  async sort(tests) {
    const sorted = await super.sort(tests);
    const rank = (test) => {
      const i = LONGEST.findIndex((path) => test.path.replace(/\\/g, '/').endsWith(path));
      return i < 0 ? LONGEST.length : i;
    };
    return [...sorted].sort((a, b) => rank(a) - rank(b));
  }
}

module.exports = LongestFirst;

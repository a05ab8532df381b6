import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** The check check-pack runs over the build, here over the sources the build compiles. */
describe('public API', () => {
  it('keeps the root within 41 names and names no internal class in public types', () => {
    const root = join(__dirname, '..', '..');
    const out = execFileSync(
      process.execPath,
      [
        join(root, 'scripts', 'public-api.mjs'),
        'src/index.ts',
        'src/extend/index.ts',
        'src/testing/index.ts',
      ],
      { cwd: root, encoding: 'utf8' },
    );
    const count = Number(/^src\/index\.ts: (\d+) names/m.exec(out)?.[1]);
    expect(count).toBeGreaterThan(0);
    expect(count).toBeLessThanOrEqual(41);
    expect(out).toContain('public API check passed');
  }, 60_000);
});

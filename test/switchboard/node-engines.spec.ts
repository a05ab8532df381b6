import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { satisfies } from 'semver';

/**
 * The package says it runs on Node ^20.19 || >=22.12: every package the lock file installs must
 * say so too, or `npm ci` warns on Node 20 (and a dependency may use what Node 20 lacks).
 */
describe('the lock file on the oldest Node the package supports', () => {
  const root = join(__dirname, '..', '..');
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    engines: { node: string };
  };
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
  };

  it('installs nothing that refuses Node 20.19', () => {
    expect(satisfies('20.19.0', pkg.engines.node)).toBe(true);
    const refusing = Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && !Array.isArray(p.engines) && p.engines?.node)
      .filter(([, p]) => !satisfies('20.19.0', (p.engines as { node: string }).node))
      .map(
        ([path, p]) =>
          `${path}@${p.version} (engines.node ${(p.engines as { node: string }).node})`,
      );
    expect(refusing).toEqual([]);
  });
});

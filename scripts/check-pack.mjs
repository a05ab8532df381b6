// Checks what `npm pack` puts in the tarball: both builds with their types, ./extend, ./testing,
// LICENSE, README and what it links to (docs/, the dashboard, the benchmark results, so that its
// relative links resolve in node_modules); no tests, sample, bench code or sources. Then the public API of that build (see
// public-api.mjs): at most 41 names at the root, no internal class named by a public type. Prints
// the file list; exits 1 naming what is wrong.
//
//   node scripts/check-pack.mjs            # runs `npm pack --dry-run --json` (which builds first)
//   node scripts/check-pack.mjs pack.json  # checks the JSON output of an earlier `npm pack --json`
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkPublicApi } from './public-api.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const json = process.argv[2]
  ? readFileSync(process.argv[2], 'utf8')
  : execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts=false'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
// npm prints the prepack build's output before the JSON on stdout.
const [pack] = JSON.parse(json.slice(json.indexOf('[')));
const files = pack.files.map((f) => f.path).sort();

const required = ['package.json', 'README.md', 'LICENSE', 'docs/configuration.md'];
for (const build of ['cjs', 'esm']) {
  required.push(`dist/${build}/package.json`);
  for (const entry of ['index', 'extend/index', 'testing/index']) {
    required.push(`dist/${build}/${entry}.js`, `dist/${build}/${entry}.d.ts`);
  }
}
const problems = required.filter((f) => !files.includes(f)).map((f) => `missing ${f}`);
const forbidden = [
  [/^(src|test|sample|bench|scripts|compat|docs|coverage)\//, 'is not part of the package'],
  [/\.spec\.|\.test\./, 'is a test'],
  [/\.ts$/, 'is a TypeScript source'],
  [/\.map$/, 'is a source map of sources not shipped'],
];
// The pages and files the README and docs/ link to.
const linked = /^(docs\/[\w.-]+\.(md|png)|dashboards\/switchboard\.json|bench\/RESULTS\.md)$/;
for (const f of files) {
  if (f.endsWith('.d.ts') || linked.test(f)) continue;
  for (const [pattern, why] of forbidden) if (pattern.test(f)) problems.push(`${f} ${why}`);
}
for (const f of files.filter((f) => /^dist\/(cjs|esm)\/.*\.js$/.test(f))) {
  const twin = f.replace(/^dist\/(cjs|esm)\//, (_, b) => `dist/${b === 'cjs' ? 'esm' : 'cjs'}/`);
  if (!files.includes(twin)) problems.push(`${f} has no twin ${twin} in the other build`);
  if (!files.includes(f.replace(/\.js$/, '.d.ts'))) problems.push(`${f} has no .d.ts`);
}

const builds = (b) => files.filter((f) => f.startsWith(`dist/${b}/`)).length;
console.log(
  `npm pack: ${pack.filename}, ${files.length} files (dist/cjs ${builds('cjs')}, dist/esm ${builds('esm')}), ` +
    `${(pack.size / 1024).toFixed(1)} kB packed, ${(pack.unpackedSize / 1024).toFixed(1)} kB unpacked`,
);
for (const f of files.filter((f) => !f.startsWith('dist/'))) console.log(`  ${f}`);
// The types as built (npm pack's prepack build left them in dist/).
if (problems.length === 0) {
  const api = checkPublicApi(
    ['index', 'extend/index', 'testing/index'].map((e) => `dist/cjs/${e}.d.ts`),
  );
  for (const [entry, names] of api.exports) console.log(`  ${entry}: ${names.length} names`);
  problems.push(...api.problems);
}
if (problems.length > 0) {
  console.error(`npm pack content check failed:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log('npm pack content check passed');

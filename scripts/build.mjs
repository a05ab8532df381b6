// `npm run build`: the CommonJS and the ESM build of src/, side by side, with their own types.
//
//   dist/cjs  tsc, module nodenext (package type commonjs): require() of the SDKs and Nest
//   dist/esm  tsc, module esnext: import of the SDKs and Nest
//
// Each build loads the SDKs through its consumer's module system, so the errors and streams a
// switchboard returns are instances of the very classes the application imports. The sources keep
// extensionless relative imports; this script adds the `.js` (or `/index.js`) that Node's ESM
// loader and TypeScript's node16/nodenext resolution need in the ESM build.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
// SWITCHBOARD_TSC: another TypeScript's bin/tsc (the compatibility job builds with TypeScript 6).
const tsc = process.env.SWITCHBOARD_TSC ?? join(root, 'node_modules', 'typescript', 'bin', 'tsc');

rmSync(dist, { recursive: true, force: true });
// Both compiles at once: each is single-threaded, and they write to separate folders.
const compiles = ['tsconfig.build.json', 'tsconfig.build.esm.json'].map(
  (project) =>
    new Promise((resolvePromise, reject) => {
      const child = spawn(process.execPath, [tsc, '-p', join(root, project)], {
        stdio: 'inherit',
        cwd: root,
      });
      child.on('error', reject);
      child.on('exit', (code, signal) =>
        code === 0
          ? resolvePromise()
          : reject(new Error(`tsc -p ${project} failed (${signal ?? `exit code ${code}`})`)),
      );
    }),
);
const failed = (await Promise.allSettled(compiles)).find((r) => r.status === 'rejected');
if (failed !== undefined) {
  console.error(failed.reason.message);
  process.exit(1);
}

writeFileSync(join(dist, 'cjs', 'package.json'), '{ "type": "commonjs" }\n');
writeFileSync(join(dist, 'esm', 'package.json'), '{ "type": "module" }\n');

// The one file whose code differs: `require` does not exist in an ES module.
writeFileSync(
  join(dist, 'esm', 'runtime', 'peer-require.js'),
  [
    "import { createRequire } from 'node:module';",
    '// ESM build: a require() that resolves from this package, as the CommonJS build does.',
    'export const peerRequire = createRequire(import.meta.url);',
    '',
  ].join('\n'),
);

const specifier = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}(?:\/[^'"]*)?)\2/g;
let rewritten = 0;
for (const file of walk(join(dist, 'esm'))) {
  const isTypes = file.endsWith('.d.ts');
  if (!isTypes && !file.endsWith('.js')) continue;
  const source = readFileSync(file, 'utf8');
  const out = source.replace(specifier, (match, lead, quote, spec) => {
    const withExt = withExtension(dirname(file), spec, isTypes);
    return withExt === spec ? match : `${lead}${quote}${withExt}${quote}`;
  });
  if (out !== source) {
    writeFileSync(file, out);
    rewritten++;
  }
}
// An ES module has no `require`: optional peers go through runtime/peer-require.
const callsRequire = (file) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .some((line) => !/^\s*(\/\/|\*|\/\*)/.test(line) && /\brequire\(/.test(line));
const stray = [...walk(join(dist, 'esm'))].filter(
  (f) => f.endsWith('.js') && !f.endsWith('peer-require.js') && callsRequire(f),
);
if (stray.length > 0) {
  throw new Error(`build: require() in the ESM build (use peerRequire): ${stray.join(', ')}`);
}
console.log(`build: dist/cjs and dist/esm written (${rewritten} ESM files given .js specifiers)`);

/** `./x` -> `./x.js`, or `./x/index.js` for a folder; kept when it already names a file. */
function withExtension(from, spec, isTypes) {
  if (/\.(c|m)?js$/.test(spec) || spec.endsWith('.json')) return spec;
  const target = resolve(from, spec);
  const emitted = (p) => existsSync(`${p}.js`) || (isTypes && existsSync(`${p}.d.ts`));
  if (emitted(target)) return `${spec}.js`;
  if (existsSync(target) && statSync(target).isDirectory() && emitted(join(target, 'index'))) {
    return `${spec}/index.js`;
  }
  throw new Error(`build: cannot resolve ${spec} from ${from}`);
}

function* walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else yield path;
  }
}

// Copies the README's quick start into a fresh app, as a reader would: the first YAML block is
// switchboard.yaml, the shell block that sets SWITCHBOARD_SIMULATE is .env, and each TypeScript
// block whose first line names `// src/<file>.ts` is that file. Also checks that the app's
// package.json has every package the README's install line names.
//
//   node compat/quickstart/copy-readme.mjs README.md APP_DIR
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [readme, app] = process.argv.slice(2);
if (!readme || !app) {
  console.error('usage: node copy-readme.mjs README.md APP_DIR');
  process.exit(2);
}
const text = readFileSync(readme, 'utf8');
const blocks = [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({
  lang: m[1],
  code: m[2],
}));
const fail = (message) => {
  console.error(`copy-readme: ${message}`);
  process.exit(1);
};

const install = blocks.find((b) => b.lang === 'sh' && /^npm install /m.test(b.code));
if (!install) fail('no `npm install` line in the README');
const wanted = install.code
  .match(/^npm install (.*)$/m)[1]
  .split(/\s+/)
  .filter(Boolean);
const deps = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')).dependencies ?? {};
const missing = wanted.filter((p) => p !== 'nestjs-switchboard' && !(p in deps));
if (missing.length > 0) fail(`the app lacks what the README installs: ${missing.join(', ')}`);

const yaml = blocks.find((b) => b.lang === 'yaml');
const dotenv = blocks.find((b) => b.lang === 'sh' && b.code.includes('SWITCHBOARD_SIMULATE'));
if (!yaml || !dotenv) fail('no YAML block, or no .env block setting SWITCHBOARD_SIMULATE');
writeFileSync(join(app, 'switchboard.yaml'), yaml.code);
writeFileSync(join(app, '.env'), dotenv.code);
const written = ['switchboard.yaml', '.env'];
mkdirSync(join(app, 'src'), { recursive: true });
for (const b of blocks.filter((x) => x.lang === 'ts')) {
  const file = /^\/\/ (src\/[\w.-]+\.ts)\b/.exec(b.code)?.[1];
  if (file === undefined) continue;
  writeFileSync(join(app, file), b.code);
  written.push(file);
}
for (const needed of ['src/app.module.ts', 'src/chat.controller.ts']) {
  if (!written.includes(needed)) fail(`the README has no block for ${needed}`);
}
console.log(`copy-readme: ${written.join(', ')}`);

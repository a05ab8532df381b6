// TypeScript to JavaScript, one file at a time, with what it transpiles kept on disk: the Jest
// workers (`ts-transform.js`) and the child processes and worker threads that specs start
// (`ts-register.js`) read the same cache. Each file is transpiled on its own (tsconfig.json sets
// isolatedModules), so its output depends on nothing but its own text, its name (the source map
// names the file beside it), the compiler options and TypeScript's version: that is the cache
// key. No directory is in it, so a fresh clone elsewhere finds what another checkout of the same
// sources left, and a child started by a spec finds the modules a worker has already loaded.
//
//   const { transpile } = require('./ts-transpile');
//   const js = transpile('/abs/path/file.ts', source);
'use strict';
const { createHash } = require('node:crypto');
const { mkdirSync, readFileSync, renameSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { basename, join } = require('node:path');

const ROOT = join(__dirname, '..', '..');
const TSCONFIG = join(ROOT, 'tsconfig.json');
const DIR = join(tmpdir(), 'nestjs-switchboard-ts');
/** Bumped when what this file passes to the compiler changes. */
const FORMAT = '1';
/** What every key starts from: the compiler's version and the configuration, read, not parsed. */
const BASE = createHash('sha256')
  .update(FORMAT)
  .update(require('typescript/package.json').version)
  .update(readFileSync(TSCONFIG, 'utf8'))
  .digest('hex');

/** The compiler and its options, loaded on the first file not in the cache (often none is). */
let compiler;
function load() {
  if (compiler === undefined) {
    const ts = require('typescript');
    const { config } = ts.readConfigFile(TSCONFIG, ts.sys.readFile);
    const { options } = ts.parseJsonConfigFileContent(config, ts.sys, ROOT);
    compiler = {
      ts,
      options: {
        ...options,
        // Stack traces point into the sources, as ts-node's do.
        sourceMap: false,
        inlineSourceMap: true,
        inlineSources: false,
        declaration: false,
        noEmit: false,
      },
    };
  }
  return compiler;
}

/** What the output of `source`, the text of the TypeScript file `filename`, depends on. */
function cacheKey(filename, source) {
  return createHash('sha256')
    .update(BASE)
    .update(basename(filename))
    .update('\0')
    .update(source)
    .digest('hex');
}

/** The JavaScript of `source`, the text of the TypeScript file `filename`, with its source map inline. */
function transpile(filename, source) {
  const name = basename(filename);
  const cached = join(DIR, `${cacheKey(filename, source)}.js`);
  try {
    return readFileSync(cached, 'utf8');
  } catch {
    // Not transpiled yet.
  }
  const { ts, options } = load();
  const { outputText } = ts.transpileModule(source, {
    fileName: name,
    compilerOptions: options,
  });
  // Written aside, then renamed: a process on the other core reads a whole file or none.
  mkdirSync(DIR, { recursive: true });
  const partial = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  writeFileSync(partial, outputText);
  renameSync(partial, cached);
  return outputText;
}

module.exports = { cacheKey, transpile };

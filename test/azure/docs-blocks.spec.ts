/**
 * Every TypeScript block of docs/azure.md (fenced `typescript`: they reach real Azure endpoints,
 * so no test runs them) must compile on its own, as the README's blocks do, as an ES module and
 * as CommonJS.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as ts from 'typescript';

const root = resolve(__dirname, '../..');
const doc = 'docs/azure.md';
const text = readFileSync(join(root, doc), 'utf8');

function blocks(): { line: number; code: string }[] {
  const out: { line: number; code: string }[] = [];
  const fence = /^```(\w*)\n([\s\S]*?)^```$/gm;
  for (let m = fence.exec(text); m !== null; m = fence.exec(text)) {
    if (m[1] === 'typescript')
      out.push({ line: text.slice(0, m.index).split('\n').length, code: m[2]! });
  }
  return out;
}

function compile(mode: 'esm' | 'cjs'): string[] {
  const config = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile).config as object;
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, root);
  const options: ts.CompilerOptions = {
    ...parsed.options,
    noEmit: true,
    noUnusedLocals: false,
    noUnusedParameters: false,
    types: ['node'],
    ...(mode === 'esm'
      ? { module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler }
      : { module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10 }),
  };
  const files = new Map(
    blocks().map((b) => [join(root, 'test', 'azure', `azure-md-line-${b.line}.ts`), b.code]),
  );
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) => {
    const code = files.get(resolve(name));
    return code !== undefined
      ? ts.createSourceFile(name, code, version)
      : getSourceFile(name, version, ...rest);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => files.has(resolve(name)) || fileExists(name);
  const program = ts.createProgram([...files.keys()], options, host);
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file !== undefined && files.has(resolve(d.file.fileName)))
    .map((d) => {
      const { line } = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
      const block = Number(/azure-md-line-(\d+)/.exec(d.file!.fileName)![1]);
      return `${doc}:${block + line + 1}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
}

describe('docs/azure.md', () => {
  it('has TypeScript blocks', () => {
    expect(blocks().length).toBeGreaterThanOrEqual(3);
  });

  it.each(['esm', 'cjs'] as const)('every TypeScript block compiles on its own (%s)', (mode) => {
    expect(compile(mode)).toEqual([]);
  });
});

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import * as ts from 'typescript';

// Types flow one way: a cycle of imports (type-only ones included) between the library's modules,
// or between its folders, is a design error, caught here for every file under src/.
const SRC = resolve(__dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') && !name.endsWith('.spec.ts') ? [path] : [];
  });
}

function resolveImport(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = resolve(dirname(from), spec.replace(/\.js$/, ''));
  for (const candidate of [`${base}.ts`, join(base, 'index.ts')]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not this one
    }
  }
  return undefined;
}

function graph(files: readonly string[]): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = info.importedFiles
      .map((f) => resolveImport(file, f.fileName))
      .filter((t): t is string => t !== undefined);
    edges.set(file, targets);
  }
  return edges;
}

/** Every cycle found by a depth-first search, each as the list of files around it. */
function cycles(edges: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of edges.keys()) if (!state.has(node)) visit(node);
  return found;
}

/** The folder under src/ a file is in; '' for the files at the root (the package's face). */
function folderOf(file: string): string {
  const parts = relative(SRC, file).split(/[\\/]/);
  return parts.length > 1 ? parts[0]! : '';
}

/** The imports between folders, as `from -> to`, each with the file imports that make it. */
function folderEdges(edges: Map<string, string[]>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [file, targets] of edges) {
    for (const target of targets) {
      const [a, b] = [folderOf(file), folderOf(target)];
      if (a === b || a === '' || b === '') continue;
      const key = `${a} -> ${b}`;
      out.set(key, [...(out.get(key) ?? []), `${relative(SRC, file)} -> ${relative(SRC, target)}`]);
    }
  }
  return out;
}

describe('module structure', () => {
  const files = sources(SRC);
  const edges = graph(files);
  const rel = (f: string) => relative(SRC, f);

  it('reads the import graph of src/', () => {
    expect(files.length).toBeGreaterThan(20);
    expect(edges.get(join(SRC, 'switchboard.ts'))!.map(rel)).toContain('providers/index.ts');
  });

  it('has no import cycles, type-only imports included', () => {
    expect(cycles(edges).map((c) => c.map(rel).join(' -> '))).toEqual([]);
  });

  it('has no import cycles between folders: each folder imports only those below it', () => {
    const between = folderEdges(edges);
    const forward = new Map<string, string[]>();
    for (const key of between.keys()) {
      const [a, b] = key.split(' -> ') as [string, string];
      forward.set(a, [...(forward.get(a) ?? []), b]);
      if (!forward.has(b)) forward.set(b, []);
    }
    const found = cycles(forward).map((c) =>
      c
        .slice(1)
        .map((to, i) => `${c[i]} -> ${to} (${between.get(`${c[i]} -> ${to}`)![0]})`)
        .join(', '),
    );
    expect(found).toEqual([]);
  });

  it('finds the folders of a cycle through two files', () => {
    const a = join(SRC, 'registry', 'a.ts');
    const b = join(SRC, 'selection', 'b.ts');
    const between = folderEdges(
      new Map([
        [a, [b]],
        [b, [a]],
      ]),
    );
    expect([...between.keys()].sort()).toEqual(['registry -> selection', 'selection -> registry']);
  });

  it('keeps the plain types module a leaf', () => {
    expect(edges.get(join(SRC, 'types.ts'))).toEqual([]);
  });

  it('finds a cycle when there is one', () => {
    const a = join(SRC, 'a.ts');
    const b = join(SRC, 'b.ts');
    expect(
      cycles(
        new Map([
          [a, [b]],
          [b, [a]],
        ]),
      ).map((c) => c.map(rel)),
    ).toEqual([['a.ts', 'b.ts', 'a.ts']]);
  });
});

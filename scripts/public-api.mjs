// The public API as the TypeScript checker sees it: the names each entry point exports, and the
// package's own declarations that a public one names without any entry point exporting them (a
// public class whose public field is typed by an internal class, say). Such a name is a leak:
// users see it in the types yet cannot import it, and renaming it breaks them all the same.
//
//   node scripts/public-api.mjs                  # dist/cjs: index, extend and testing (npm run build first)
//   node scripts/public-api.mjs src/index.ts src/extend/index.ts src/testing/index.ts
//
// The first entry is the root. Prints the count and the names; exits 1 when the root exports more
// than ROOT_LIMIT names or a class leaks. check-pack.mjs runs the same check over the tarball's build.
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * At most this many names at the package root: what a Nest or standalone user needs, no more (the
 * module's three injectable providers among them).
 */
export const ROOT_LIMIT = 41;

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Exports of each entry and the leaks among them.
 * @param {string[]} entries root first, paths relative to the repository
 * @returns {{ exports: Map<string, string[]>, leaks: { name: string, via: string, isClass: boolean }[] }}
 */
export function publicApi(entries) {
  const files = entries.map((e) => resolve(root, e));
  const options = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    experimentalDecorators: true,
    skipLibCheck: true,
    noEmit: true,
    // The language's own types, and none of the DOM's or of an @types package: like every other
    // package's, the names they declare are never the package's own, and they were the most of
    // what was parsed.
    lib: ['lib.es2022.d.ts'],
    types: [],
  };
  // Only the package's own files are resolved, for the same reason: the walk below stops at
  // another package's names either way, and parsing the SDKs', Nest's and zod's types (seven times
  // the package's own) was most of the check's time.
  const host = ts.createCompilerHost(options);
  host.resolveModuleNameLiterals = (literals, containingFile) =>
    literals.map(({ text }) => ({
      resolvedModule: text.startsWith('.')
        ? ts.resolveModuleName(text, containingFile, options, host).resolvedModule
        : undefined,
    }));
  const program = ts.createProgram(files, options, host);
  const checker = program.getTypeChecker();
  const own = (file) => {
    const rel = relative(root, file);
    return !rel.startsWith('..') && !rel.includes('node_modules');
  };
  const resolveAlias = (s) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);

  const exports = new Map();
  const exported = new Set();
  const roots = [];
  for (const file of files) {
    const source = program.getSourceFile(file);
    if (source === undefined) throw new Error(`public-api: ${file} not found (npm run build?)`);
    const symbols = checker.getExportsOfModule(checker.getSymbolAtLocation(source));
    exports.set(relative(root, file), symbols.map((s) => s.name).sort());
    for (const s of symbols) {
      const target = resolveAlias(s);
      exported.add(target);
      roots.push(target);
    }
  }

  // Walks every public declaration; an own, unexported symbol it names is a leak, walked in turn.
  const leaks = new Map();
  const seen = new Set();
  const queue = roots.map((symbol) => ({ symbol, via: symbol.name }));
  while (queue.length > 0) {
    const { symbol, via } = queue.shift();
    if (seen.has(symbol)) continue;
    seen.add(symbol);
    for (const declaration of symbol.declarations ?? []) {
      if (!own(declaration.getSourceFile().fileName)) continue;
      visit(declaration, via);
    }
  }
  return {
    exports,
    leaks: [...leaks]
      .map(([name, { via, isClass }]) => ({ name, via, isClass }))
      .sort((a, b) => a.name.localeCompare(b.name)),
  };

  function visit(node, via) {
    if (isHidden(node)) return;
    let name;
    if (ts.isTypeReferenceNode(node)) name = node.typeName;
    else if (ts.isExpressionWithTypeArguments(node)) name = node.expression;
    else if (ts.isTypeQueryNode(node)) name = node.exprName;
    else if (ts.isImportTypeNode(node)) name = node.qualifier;
    if (name !== undefined) {
      const found = checker.getSymbolAtLocation(name);
      const symbol = found && resolveAlias(found);
      const declared = symbol?.declarations?.[0];
      if (
        declared !== undefined &&
        !(symbol.flags & ts.SymbolFlags.TypeParameter) &&
        own(declared.getSourceFile().fileName) &&
        !exported.has(symbol) &&
        !ts.isTypeParameterDeclaration(declared)
      ) {
        if (!leaks.has(symbol.name))
          leaks.set(symbol.name, { via, isClass: ts.isClassDeclaration(declared) });
        queue.push({ symbol, via: `${via} → ${symbol.name}` });
      }
    }
    // The body of a type alias, interface, class or signature: all of it is public, bar hidden members.
    ts.forEachChild(node, (child) => visit(child, via));
  }
}

/**
 * Private and protected members, #private names and what `@internal` marks (the build strips it
 * with stripInternal) are not part of a type users can use.
 */
function isHidden(node) {
  if (ts.getJSDocTags(node).some((t) => t.tagName.text === 'internal')) return true;
  if (ts.isClassElement(node) && node.name !== undefined && ts.isPrivateIdentifier(node.name)) {
    return true;
  }
  const modifiers = ts.canHaveModifiers(node) ? ts.getModifiers(node) : undefined;
  return (modifiers ?? []).some(
    (m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword,
  );
}

/**
 * The check: problems found, empty when the API is within bounds.
 * @param {string[]} entries root first
 */
export function checkPublicApi(entries) {
  const { exports, leaks } = publicApi(entries);
  const [rootEntry] = exports.keys();
  const rootNames = exports.get(rootEntry);
  // A class is behaviour users would come to rely on; an unexported interface or alias only
  // describes a shape (listed, not refused).
  const classes = leaks.filter((l) => l.isClass);
  // An internal class users need to read is offered as a read-only view (`ModelState.quotaView`).
  const problems = classes.map(
    (l) => `class ${l.name} is named by a public declaration (${l.via}) but exported by no entry`,
  );
  const unnamed = leaks.filter((l) => !l.isClass).map((l) => l.name);
  if (rootNames.length > ROOT_LIMIT) {
    problems.push(`${rootEntry} exports ${rootNames.length} names, more than ${ROOT_LIMIT}`);
  }
  return { exports, problems, unnamed };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const entries =
    process.argv.length > 2
      ? process.argv.slice(2)
      : ['index', 'extend/index', 'testing/index'].map((e) => `dist/cjs/${e}.d.ts`);
  const { exports, problems, unnamed } = checkPublicApi(entries);
  for (const [entry, names] of exports) {
    console.log(`${entry}: ${names.length} names\n  ${names.join(', ')}`);
  }
  console.log(`types named but not exported (shapes only): ${unnamed.join(', ') || 'none'}`);
  if (problems.length > 0) {
    console.error(`public API check failed:\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
  console.log('public API check passed');
}

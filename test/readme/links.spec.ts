/**
 * Every relative link of README.md and docs/*.md leads somewhere: the file exists, its anchor is a
 * heading of that file (GitHub's slugs), and the file is in the package (`files` of package.json),
 * so that the links resolve for a reader of the tarball in node_modules too.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(__dirname, '../..');
const documents = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown file: its headings' slugs, numbered as GitHub numbers repeats. */
function anchors(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```$/gm, '');
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of text.matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Every relative link of a Markdown file, outside code: [text](target) and <img src>. */
function links(doc: string): { target: string; line: number }[] {
  const text = readFileSync(join(root, doc), 'utf8');
  const out: { target: string; line: number }[] = [];
  const prose = text.replace(/^```[\s\S]*?^```$/gm, (block) => block.replace(/[^\n]/g, ' '));
  const inline = prose.replace(/`[^`\n]*`/g, (code) => ' '.repeat(code.length));
  for (const m of inline.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)|src="([^"]+)"/g)) {
    const target = (m[1] ?? m[2])!;
    if (/^[a-z]+:/i.test(target)) continue;
    out.push({ target, line: inline.slice(0, m.index).split('\n').length });
  }
  return out;
}

/** Whether `path` (relative to the root) is in the package by package.json's `files`. */
function packed(path: string): boolean {
  const files = (
    JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { files: string[] }
  ).files;
  return (
    ['package.json'].includes(path) ||
    files.some((f) => path === f || path.startsWith(`${f.replace(/\/$/, '')}/`))
  );
}

describe('links of README.md and docs/', () => {
  const all = documents.flatMap((doc) => links(doc).map((l) => ({ doc, ...l })));

  it('are found', () => {
    expect(all.length).toBeGreaterThan(30);
  });

  it('lead to files that exist, and to headings that exist', () => {
    const broken: string[] = [];
    for (const { doc, target, line } of all) {
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const file = path === '' ? join(root, doc) : resolve(dirname(join(root, doc)), path);
      if (!existsSync(file)) {
        broken.push(`${doc}:${line}: ${target}: no file ${relative(root, file)}`);
        continue;
      }
      if (anchor !== undefined && file.endsWith('.md') && !anchors(file).has(anchor)) {
        broken.push(`${doc}:${line}: ${target}: no heading #${anchor} in ${relative(root, file)}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('lead only to files the package ships, so that they resolve in node_modules', () => {
    const outside = all
      .map(({ doc, target, line }) => {
        const path = target.split('#')[0]!;
        const file = relative(
          root,
          path === '' ? join(root, doc) : resolve(dirname(join(root, doc)), path),
        );
        return { where: `${doc}:${line}: ${target}`, file };
      })
      .filter(({ file }) => !packed(file))
      .map(({ where, file }) => `${where} (${file} is not in package.json's files)`);
    expect(outside).toEqual([]);
  });
});

describe("the package's address", () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    repository?: { type?: string; url?: string };
    homepage?: string;
    bugs?: string | { url?: string };
  };
  /** The repository's web address, from `repository.url` (`git+https://….git`). */
  const web = /^git\+(https:\/\/github\.com\/[\w.-]+\/[\w.-]+)\.git$/.exec(
    pkg.repository?.url ?? '',
  )?.[1];

  it('names a git repository on GitHub', () => {
    expect(pkg.repository?.type).toBe('git');
    expect(web).toBeDefined();
  });

  it('homepage and bugs agree with the repository', () => {
    expect(pkg.homepage).toBe(`${web}#readme`);
    const bugs = typeof pkg.bugs === 'string' ? pkg.bugs : pkg.bugs?.url;
    expect(bugs).toBe(`${web}/issues`);
  });

  it('the README says where the source lives', () => {
    expect(readFileSync(join(root, 'README.md'), 'utf8')).toContain(`](${web})`);
  });
});

/**
 * docs/configuration.md documents every key the option schema accepts: each top-level option, each
 * field of a deployment and of a model, and each key of a nested object (`failover.attempts`,
 * `health.ready`), with its meaning and its default. A key added to the schema without its row
 * fails here, naming the key and the table to add it to.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import { switchboardOptionsSchema } from 'nestjs-switchboard/extend';

const PAGE = 'docs/configuration.md';
const text = readFileSync(join(__dirname, '..', '..', PAGE), 'utf8');

interface Row {
  /** The keys the first cell names: `failover.attempts`, or both of `clock`, `random`. */
  keys: string[];
  cells: string[];
  line: number;
}

/** The rows of the table under the heading `title` (up to the next heading). */
function table(title: string): Row[] {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => /^#{2,4} /.test(l) && l.replace(/^#+ /, '') === title);
  if (start < 0) throw new Error(`${PAGE} has no heading "${title}"`);
  const rows: Row[] = [];
  for (let i = start + 1; i < lines.length && !/^#{1,4} /.test(lines[i]!); i++) {
    const line = lines[i]!;
    if (!line.startsWith('|') || /^\|\s*-/.test(line)) continue;
    const cells = line
      .split(/(?<!\\)\|/)
      .slice(1, -1)
      .map((c) => c.trim());
    const keys = [...cells[0]!.matchAll(/`([\w.]+)`/g)].map((m) => m[1]!);
    if (keys.length > 0) rows.push({ keys, cells, line: i + 1 });
  }
  return rows;
}

type Schema = z.ZodType & { _zod: { def: Record<string, unknown> & { type: string } } };

/** The object shapes a schema holds, through optional, array, union, record and pipe. */
function shapes(schema: Schema): Record<string, Schema>[] {
  const def = schema._zod.def;
  switch (def.type) {
    case 'object':
      return [def.shape as Record<string, Schema>];
    case 'optional':
    case 'nullable':
    case 'default':
    case 'readonly':
      return shapes(def.innerType as Schema);
    case 'array':
      return shapes(def.element as Schema);
    case 'union':
      return (def.options as Schema[]).flatMap(shapes);
    case 'pipe':
      return [...shapes(def.in as Schema), ...shapes(def.out as Schema)];
    default:
      return [];
  }
}

const keysOf = (schema: Schema) => [...new Set(shapes(schema).flatMap((s) => Object.keys(s)))];
const childOf = (schema: Schema, key: string): Schema[] =>
  shapes(schema)
    .map((s) => s[key])
    .filter((s): s is Schema => s !== undefined);

const root = switchboardOptionsSchema as unknown as Schema;
const deploymentSchemas = childOf(root, 'deployments');
const modelSchemas = deploymentSchemas.flatMap((d) => childOf(d, 'models'));

/**
 * What is missing from one table: every key of `schemas` without a row, and every key of a nested
 * object (one level down) named neither as `key.sub` nor in its parent's row.
 */
function missing(title: string, schemas: Schema[], where: string): string[] {
  const rows = table(title);
  const problems: string[] = [];
  const keys = [...new Set(schemas.flatMap(keysOf))];
  for (const key of keys) {
    const own = rows.filter(
      (r) => r.keys.includes(key) || r.keys.some((k) => k.startsWith(`${key}.`)),
    );
    if (own.length === 0) {
      problems.push(
        `${where} accepts \`${key}\`, but ${PAGE} has no row for it: add one to the table under "${title}" (the key, what it does in one line, its default)`,
      );
      continue;
    }
    for (const row of own) {
      // The last two cells: its meaning and its default (`—` for none).
      if (row.cells.length < 3 || row.cells.slice(-2).some((c) => c === '')) {
        problems.push(
          `${PAGE}:${row.line}: the row of \`${key}\` needs its meaning and its default`,
        );
      }
    }
    const children = [...new Set(schemas.flatMap((s) => childOf(s, key)).flatMap(keysOf))];
    // Nested objects of the deployments and models tables are described in their own sections.
    if (key === 'deployments' || key === 'models') continue;
    for (const sub of children) {
      const named = own.some(
        (r) =>
          r.keys.includes(`${key}.${sub}`) || new RegExp(`\\b${sub}\\b`).test(r.cells.join(' ')),
      );
      if (!named) {
        problems.push(
          `${where} accepts \`${key}.${sub}\`, but ${PAGE} names it nowhere: add a row for \`${key}.${sub}\` under "${title}", or name \`${sub}\` in the row of \`${key}\``,
        );
      }
    }
  }
  return problems;
}

describe(`${PAGE} documents every option the schema accepts`, () => {
  it('finds the schema keys', () => {
    expect(keysOf(root)).toContain('deployments');
    expect(deploymentSchemas.length).toBeGreaterThan(0);
    expect(modelSchemas.length).toBeGreaterThan(0);
  });

  it('every top-level option', () => {
    expect(
      missing('`SwitchboardOptions`', [root], 'the option schema (switchboardOptionsSchema)'),
    ).toEqual([]);
  });

  it("every field of a deployment (either provider's)", () => {
    expect(missing('Deployments', deploymentSchemas, 'a deployment')).toEqual([]);
  });

  it('every field of a model', () => {
    expect(missing('Models', modelSchemas, 'a model of a deployment')).toEqual([]);
  });
});

/**
 * Deterministic sample values for JSON schemas, used by the simulated deployments to answer
 * structured-output requests (`response_format: { type: 'json_schema' }` on OpenAI,
 * `output_config.format` on Anthropic) with JSON that fits the requested schema.
 */

/**
 * Options of {@link sampleJsonSchema}.
 *
 * @example
 * ```ts
 * sampleJsonSchema(treeSchema, { maxDepth: 3 }); // shallower samples of recursive schemas
 * ```
 */
interface JsonSchemaSampleOptions {
  /**
   * Nesting depth from which the sampler produces the smallest valid value it can: arrays get only
   * `minItems` items, unions prefer their `null` variant and objects keep only their required
   * properties. Ends recursive (`$ref`) schemas. Default 8.
   */
  maxDepth?: number;
}

type Schema = Record<string, unknown>;

/** Sample values for the string formats a JSON schema (and Zod's JSON schema output) may name. */
const FORMAT_SAMPLES: Readonly<Record<string, string>> = {
  'date-time': '2024-01-01T00:00:00Z',
  date: '2024-01-01',
  time: '00:00:00',
  duration: 'P1D',
  email: 'user@example.com',
  'idn-email': 'user@example.com',
  hostname: 'example.com',
  'idn-hostname': 'example.com',
  uri: 'https://example.com/',
  url: 'https://example.com/',
  'uri-reference': 'https://example.com/',
  iri: 'https://example.com/',
  'iri-reference': 'https://example.com/',
  'uri-template': 'https://example.com/',
  ipv4: '127.0.0.1',
  ipv6: '::1',
  uuid: '00000000-0000-4000-8000-000000000000',
  guid: '00000000-0000-4000-8000-000000000000',
  'json-pointer': '/a',
  'relative-json-pointer': '0',
  regex: '.*',
  base64: 'AAAA',
  base64url: 'AAAA',
  cidrv4: '10.0.0.0/8',
  cidrv6: '::/0',
  e164: '+15555555555',
  emoji: '😀',
  nanoid: 'V1StGXR8_Z5jdHi6B-myT',
  cuid: 'cjld2cjxh0000qzrmn831i7rn',
  cuid2: 'tz4a98xxat96iws9zmbrgj3a',
  ulid: '01ARZ3NDEKTSV4RRFFQ69G5FAV',
  xid: '9m4e2mr0ui3e8a215n4g',
  ksuid: '0ujtsYcgvSTl8PAuAdqWYSMnLOv',
  jwt: 'eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.',
  mac: '00:00:00:00:00:00',
};

const isSchema = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const hasOwn = (object: object, key: string): boolean =>
  Object.prototype.hasOwnProperty.call(object, key);

/**
 * Produces a deterministic value that validates against `schema` (best effort).
 *
 * Objects get every property (required or not), arrays one item (or `minItems`), strings a
 * placeholder that honours `format`, `pattern` (simple regular expressions), `minLength` and
 * `maxLength`, numbers the value closest to 0 within `minimum` / `maximum` / `multipleOf`,
 * booleans `true`; `const`, `enum` (first value) and `default` win over the type; `anyOf` /
 * `oneOf` take their first variant, `allOf` is merged, type arrays take their first non-null type,
 * and `$ref` is resolved against `$defs` / `definitions` of the root schema. Constraints that
 * `@anthropic-ai/sdk` moves into a `description` (`"{minLength: 3}"`) are read back from it.
 *
 * @example
 * ```ts
 * sampleJsonSchema({
 *   type: 'object',
 *   properties: { name: { type: 'string' }, tags: { type: 'array', items: { enum: ['a', 'b'] } } },
 * });
 * // => { name: 'string', tags: ['a'] }
 * ```
 */
export function sampleJsonSchema(schema: unknown, options: JsonSchemaSampleOptions = {}): unknown {
  return new Sampler(schema, options.maxDepth ?? 8).sample(schema, 0);
}

class Sampler {
  private readonly hardLimit: number;

  constructor(
    private readonly root: unknown,
    private readonly maxDepth: number,
  ) {
    this.hardLimit = maxDepth + 32;
  }

  sample(node: unknown, depth: number): unknown {
    if (!isSchema(node) || depth > this.hardLimit) return null;
    const schema = withDescriptionConstraints(node);
    const minimal = depth >= this.maxDepth;

    if (typeof schema['$ref'] === 'string') {
      const { $ref, ...rest } = schema;
      const target = this.resolve($ref as string);
      return this.sample(isSchema(target) ? mergeSchemas(target, rest) : rest, depth + 1);
    }
    if (hasOwn(schema, 'const')) return schema['const'];
    if (Array.isArray(schema['enum']) && schema['enum'].length > 0) return schema['enum'][0];
    if (schema['default'] !== undefined) return schema['default'];

    const variants = Array.isArray(schema['anyOf'])
      ? schema['anyOf']
      : Array.isArray(schema['oneOf'])
        ? schema['oneOf']
        : undefined;
    if (variants && variants.length > 0) {
      const { anyOf: _anyOf, oneOf: _oneOf, ...rest } = schema;
      const pick = (minimal && variants.find((v) => this.isNullSchema(v))) || variants[0];
      return this.sample(mergeSchemas(rest, this.deref(pick)), depth + 1);
    }
    if (Array.isArray(schema['allOf']) && schema['allOf'].length > 0) {
      const { allOf, ...rest } = schema;
      const merged = (allOf as unknown[]).reduce<Schema>(
        (acc, part) => mergeSchemas(acc, this.deref(part)),
        rest,
      );
      return this.sample(merged, depth + 1);
    }

    switch (schemaType(schema, minimal)) {
      case 'object':
        return this.sampleObject(schema, depth, minimal);
      case 'array':
        return this.sampleArray(schema, depth, minimal);
      case 'string':
        return sampleString(schema);
      case 'integer':
        return sampleNumber(schema, true);
      case 'number':
        return sampleNumber(schema, false);
      case 'boolean':
        return true;
      default:
        return null;
    }
  }

  private sampleObject(schema: Schema, depth: number, minimal: boolean): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const set = (key: string, value: unknown): void => {
      Object.defineProperty(out, key, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    };
    const required = Array.isArray(schema['required'])
      ? schema['required'].filter((k): k is string => typeof k === 'string')
      : undefined;
    const properties = isSchema(schema['properties']) ? schema['properties'] : {};
    for (const [key, propertySchema] of Object.entries(properties)) {
      if (minimal && required && !required.includes(key)) continue;
      set(key, this.sample(propertySchema, depth + 1));
    }
    for (const key of required ?? []) {
      if (!hasOwn(out, key)) set(key, this.sample(schema['additionalProperties'], depth + 1));
    }
    return out;
  }

  private sampleArray(schema: Schema, depth: number, minimal: boolean): unknown[] {
    const minItems = typeof schema['minItems'] === 'number' ? schema['minItems'] : 0;
    const maxItems = typeof schema['maxItems'] === 'number' ? schema['maxItems'] : Infinity;
    const count = Math.min(minimal ? minItems : Math.max(minItems, 1), maxItems);
    const prefix = Array.isArray(schema['prefixItems'])
      ? schema['prefixItems']
      : Array.isArray(schema['items'])
        ? schema['items']
        : undefined;
    const out: unknown[] = [];
    if (prefix) {
      for (const item of prefix) out.push(this.sample(item, depth + 1));
      const rest = Array.isArray(schema['prefixItems'])
        ? schema['items']
        : schema['additionalItems'];
      while (out.length < count && isSchema(rest)) out.push(this.sample(rest, depth + 1));
      return out;
    }
    while (out.length < count) out.push(this.sample(schema['items'], depth + 1));
    return out;
  }

  private deref(node: unknown): Schema {
    if (!isSchema(node)) return {};
    if (typeof node['$ref'] !== 'string') return node;
    const { $ref, ...rest } = node;
    const target = this.resolve($ref as string);
    return isSchema(target) ? mergeSchemas(target, rest) : rest;
  }

  private isNullSchema(node: unknown): boolean {
    const schema = this.deref(node);
    return (
      schema['type'] === 'null' ||
      (Array.isArray(schema['type']) && schema['type'].includes('null')) ||
      schema['const'] === null
    );
  }

  /** Resolves a local JSON pointer (`#`, `#/$defs/Name`, `#/definitions/Name`). */
  private resolve(ref: string): unknown {
    if (!ref.startsWith('#')) return undefined;
    const pointer = ref.slice(1);
    if (pointer === '' || pointer === '/') return this.root;
    let current: unknown = this.root;
    for (const raw of pointer.replace(/^\//, '').split('/')) {
      const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      if (Array.isArray(current)) current = current[Number(key)];
      else if (isSchema(current) && hasOwn(current, key)) current = current[key];
      else return undefined;
    }
    return current;
  }
}

function schemaType(schema: Schema, minimal: boolean): string | undefined {
  const type = schema['type'];
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) {
    const types = type.filter((t): t is string => typeof t === 'string');
    if (minimal && types.includes('null')) return 'null';
    return types.find((t) => t !== 'null') ?? types[0];
  }
  if ('properties' in schema || 'required' in schema || 'additionalProperties' in schema) {
    return 'object';
  }
  if ('items' in schema || 'prefixItems' in schema) return 'array';
  if ('minLength' in schema || 'maxLength' in schema || 'pattern' in schema || 'format' in schema) {
    return 'string';
  }
  if ('minimum' in schema || 'maximum' in schema || 'multipleOf' in schema) return 'number';
  return undefined;
}

function mergeSchemas(base: Schema, extra: Schema): Schema {
  const merged: Schema = { ...base, ...extra };
  if (isSchema(base['properties']) || isSchema(extra['properties'])) {
    merged['properties'] = {
      ...(isSchema(base['properties']) ? base['properties'] : {}),
      ...(isSchema(extra['properties']) ? extra['properties'] : {}),
    };
  }
  if (Array.isArray(base['required']) || Array.isArray(extra['required'])) {
    merged['required'] = [
      ...new Set([
        ...(Array.isArray(base['required']) ? base['required'] : []),
        ...(Array.isArray(extra['required']) ? extra['required'] : []),
      ]),
    ];
  }
  return merged;
}

/**
 * `@anthropic-ai/sdk`'s `transformJSONSchema` moves unsupported keywords into the description as
 * `"<description>\n\n{minLength: 3, maximum: 10}"`; read them back so the sample still fits the
 * Zod schema the SDK validates the answer with.
 */
function withDescriptionConstraints(schema: Schema): Schema {
  const description = schema['description'];
  if (typeof description !== 'string' || !description.endsWith('}')) return schema;
  const start = description.lastIndexOf('\n\n{');
  const block =
    start >= 0 ? description.slice(start + 2) : description.startsWith('{') ? description : '';
  if (!block) return schema;
  const inner = block.slice(1, -1);
  const keyPattern = /(?:^|, )([A-Za-z$_][\w$]*): /g;
  const keys: Array<{ key: string; start: number; end: number }> = [];
  for (let match = keyPattern.exec(inner); match; match = keyPattern.exec(inner)) {
    keys.push({ key: match[1] as string, start: match.index, end: match.index + match[0].length });
  }
  if (keys.length === 0 || keys[0]?.start !== 0) return schema;
  const extra: Schema = {};
  for (let i = 0; i < keys.length; i++) {
    const entry = keys[i] as { key: string; end: number };
    const next = keys[i + 1];
    const raw = inner.slice(entry.end, next ? next.start : inner.length);
    try {
      extra[entry.key] = JSON.parse(raw) as unknown;
    } catch {
      return schema;
    }
  }
  const merged: Schema = { ...schema };
  for (const [key, value] of Object.entries(extra)) if (!hasOwn(merged, key)) merged[key] = value;
  return merged;
}

function compilePattern(pattern: unknown): RegExp | undefined {
  if (typeof pattern !== 'string') return undefined;
  for (const flags of ['u', '']) {
    try {
      return new RegExp(pattern, flags);
    } catch {
      // try the next flag set
    }
  }
  return undefined;
}

function sampleString(schema: Schema): string {
  const format = typeof schema['format'] === 'string' ? schema['format'] : undefined;
  const regex = compilePattern(schema['pattern']);
  let value = (format && FORMAT_SAMPLES[format]) || 'string';
  if (regex && !regex.test(value)) {
    const generated = sampleRegex(schema['pattern'] as string);
    if (generated !== undefined && regex.test(generated)) value = generated;
  }
  const min = typeof schema['minLength'] === 'number' ? schema['minLength'] : 0;
  const max = typeof schema['maxLength'] === 'number' ? schema['maxLength'] : Infinity;
  let sized = value;
  if (sized.length < min) sized = sized + 'x'.repeat(min - sized.length);
  if (sized.length > max) sized = sized.slice(0, Math.max(0, max));
  return !regex || regex.test(sized) ? sized : value;
}

function sampleNumber(schema: Schema, integer: boolean): number {
  let lo = -Infinity;
  let hi = Infinity;
  let loExclusive = false;
  let hiExclusive = false;
  if (typeof schema['minimum'] === 'number') lo = schema['minimum'];
  if (typeof schema['maximum'] === 'number') hi = schema['maximum'];
  const exMin = schema['exclusiveMinimum'];
  const exMax = schema['exclusiveMaximum'];
  if (typeof exMin === 'number' && exMin >= lo) [lo, loExclusive] = [exMin, true];
  else if (exMin === true) loExclusive = true;
  if (typeof exMax === 'number' && exMax <= hi) [hi, hiExclusive] = [exMax, true];
  else if (exMax === true) hiExclusive = true;
  const step =
    typeof schema['multipleOf'] === 'number' && schema['multipleOf'] > 0
      ? schema['multipleOf']
      : undefined;

  const fits = (x: number): boolean =>
    Number.isFinite(x) &&
    (loExclusive ? x > lo : x >= lo) &&
    (hiExclusive ? x < hi : x <= hi) &&
    (!integer || Number.isInteger(x)) &&
    (step === undefined || Math.abs(x / step - Math.round(x / step)) < 1e-9);

  const candidates = [0, 1, -1, lo, hi, Math.ceil(lo), Math.floor(hi), lo + 1, hi - 1];
  if (Number.isFinite(lo) && Number.isFinite(hi)) candidates.push((lo + hi) / 2);
  if (step !== undefined) {
    const base = Number.isFinite(lo)
      ? Math.ceil(lo / step)
      : Number.isFinite(hi)
        ? Math.floor(hi / step)
        : 0;
    for (let k = 0; k < 1000; k++) candidates.push((base + k) * step, (base - k) * step);
  }
  return candidates.find(fits) ?? (Number.isFinite(lo) ? lo : Number.isFinite(hi) ? hi : 0);
}

const CLASS_SAMPLES: Readonly<Record<string, string>> = {
  d: '0',
  D: 'a',
  w: 'a',
  W: '-',
  s: ' ',
  S: 'a',
  n: '\n',
  t: '\t',
  r: '\r',
};

/**
 * Builds a string matching a simple regular expression: literals, escapes, `.`, character
 * classes, groups with alternation (the first branch), anchors and quantifiers (their minimum,
 * one for `+`). Lookarounds and back references are skipped. Returns `undefined` when the pattern
 * cannot be read; callers verify the result against the real `RegExp`.
 *
 * @example
 * ```ts
 * sampleRegex('^[A-Z]{3}-\\d+$'); // => 'AAA-0'
 * ```
 */
export function sampleRegex(pattern: string): string | undefined {
  let pos = 0;

  const parseAlternation = (): string => {
    const first = parseSequence();
    while (pattern[pos] === '|') {
      pos++;
      parseSequence();
    }
    return first;
  };

  const parseSequence = (): string => {
    let out = '';
    while (pos < pattern.length && pattern[pos] !== '|' && pattern[pos] !== ')') {
      const atom = parseAtom();
      const [min] = parseQuantifier();
      out += atom.repeat(min);
    }
    return out;
  };

  const parseQuantifier = (): [number] => {
    const c = pattern[pos];
    let min = 1;
    if (c === '*' || c === '?') {
      min = 0;
      pos++;
    } else if (c === '+') {
      pos++;
    } else if (c === '{') {
      const match = /^\{(\d+)(,\d*)?\}/.exec(pattern.slice(pos));
      if (!match) return [1];
      min = Number(match[1]);
      pos += match[0].length;
    } else {
      return [1];
    }
    if (pattern[pos] === '?' || pattern[pos] === '+') pos++;
    return [min];
  };

  const parseEscape = (): string => {
    const c = pattern[pos++];
    if (c === undefined) throw new Error('dangling escape');
    if (c === 'b' || c === 'B') return '';
    if (c === 'u' && /^[0-9a-fA-F]{4}/.test(pattern.slice(pos))) {
      pos += 4;
      return String.fromCharCode(parseInt(pattern.slice(pos - 4, pos), 16));
    }
    if (c === 'x' && /^[0-9a-fA-F]{2}/.test(pattern.slice(pos))) {
      pos += 2;
      return String.fromCharCode(parseInt(pattern.slice(pos - 2, pos), 16));
    }
    if (/[1-9]/.test(c)) return '';
    return CLASS_SAMPLES[c] ?? c;
  };

  const parseClass = (): string => {
    const negated = pattern[pos] === '^';
    if (negated) pos++;
    const start = pos;
    const members: string[] = [];
    while (pos < pattern.length && pattern[pos] !== ']') {
      const c = pattern[pos++] as string;
      members.push(c === '\\' ? parseEscape() : c);
      if (pattern[pos] === '-' && pos + 1 < pattern.length && pattern[pos + 1] !== ']') {
        pos++;
        if (pattern[pos++] === '\\') parseEscape();
      }
    }
    if (pattern[pos] !== ']') throw new Error('unterminated class');
    const raw = pattern.slice(start, pos);
    pos++;
    if (!negated) return members[0] ?? '';
    const excluded = compilePattern(`[${raw}]`);
    if (!excluded) throw new Error('unreadable class');
    return ['a', 'x', 'A', '0', '_', '-', ' '].find((c) => !excluded.test(c)) ?? '~';
  };

  const parseAtom = (): string => {
    const c = pattern[pos++];
    switch (c) {
      case '^':
      case '$':
        return '';
      case '.':
        return 'a';
      case '\\':
        return parseEscape();
      case '[':
        return parseClass();
      case '(': {
        let lookaround = false;
        if (pattern[pos] === '?') {
          const rest = pattern.slice(pos);
          if (rest.startsWith('?:')) pos += 2;
          else if (/^\?<?[=!]/.test(rest)) {
            lookaround = true;
            pos += rest[1] === '<' ? 3 : 2;
          } else {
            const named = /^\?<[A-Za-z_$][\w$]*>/.exec(rest);
            if (!named) throw new Error('unsupported group');
            pos += named[0].length;
          }
        }
        const inner = parseAlternation();
        if (pattern[pos] !== ')') throw new Error('unterminated group');
        pos++;
        return lookaround ? '' : inner;
      }
      default:
        if (c === undefined) throw new Error('unexpected end');
        return c;
    }
  };

  try {
    const out = parseAlternation();
    return pos === pattern.length ? out : undefined;
  } catch {
    return undefined;
  }
}

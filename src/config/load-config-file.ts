import { extname, resolve } from 'node:path';
import { isPair, isScalar, isSeq, LineCounter, parseDocument, visit, type Document } from 'yaml';
import { MAX_CONFIG_FILE_BYTES, readBoundedFile } from './read-bounded-file';
import type { SwitchboardOptions } from './switchboard-options';
import { SwitchboardConfigError } from './switchboard-config.error';
import { describeIssues, formatPath, formatProblem } from '../errors/field-path';
import { switchboardOptionsSchema } from './options-schema';
import { crossCheck } from './validate-options';
import { isSimulated } from './simulate-option';
import { hideSecrets, interpolate, keyStandIn, simulationStandIn, startsWith } from './interpolate';

/**
 * Environment variables, as `process.env` holds them.
 *
 * @example
 * ```ts
 * loadSwitchboardConfigFile('switchboard.yaml', { ...process.env, EAST_KEY: 'from-a-vault' });
 * ```
 */
export type SwitchboardEnv = Readonly<Record<string, string | undefined>>;

/**
 * How {@link parseSwitchboardConfig} reads a text.
 *
 * @example
 * ```ts
 * const options: ParseSwitchboardConfigOptions = { source: 'switchboard.yaml', env: process.env };
 * ```
 */
export interface ParseSwitchboardConfigOptions {
  /** Name of the file (or other origin) that every problem line starts with. */
  source: string;
  /** `json` is parsed strictly; `yaml` (the default) also reads JSON. */
  format?: 'yaml' | 'json';
  /** Where `${VAR}` references are looked up. Default `process.env`. */
  env?: SwitchboardEnv;
}

// Options that hold code (instances, functions): a file cannot express them.
const CODE_ONLY_KEYS: Readonly<Record<string, string>> = {
  selector: 'selector: MySelector',
  state: 'state: redisState({ url })',
  logger: 'logger: myLogger',
  adapters: 'adapters: [myAdapter]',
  clock: 'clock: () => Date.now()',
  random: 'random: Math.random',
};

/**
 * Reads switchboard options from a YAML or JSON file (`.json` is parsed as JSON, anything else
 * as YAML), replaces `${VAR}`, `${VAR:-default}` and `${VAR-default}` in string values from the
 * environment (`$${` writes a literal `${`) and validates the result. A relative path is resolved
 * against the working directory. A file that is not a regular file, or larger than 4 MiB, is
 * refused before it is read.
 *
 * @throws {@link SwitchboardConfigError} listing every problem: unreadable file, syntax error
 *   (with line and column), unset variable, unknown key, invalid value (with its field path).
 *
 * @example
 * ```ts
 * const options = loadSwitchboardConfigFile('config/switchboard.yaml');
 * const sb = createSwitchboard(options);
 * ```
 */
export function loadSwitchboardConfigFile(
  path: string,
  env: SwitchboardEnv = process.env,
): SwitchboardOptions {
  return readConfigFile(path, env, false);
}

/**
 * @internal {@link loadSwitchboardConfigFile} for a command that sends nothing (`plan`): a key
 * whose variable is unset reads as a placeholder, while an unset endpoint is still named.
 *
 * @example
 * ```ts
 * const options = loadConfigFileWithoutKeys('switchboard.yaml', process.env);
 * ```
 */
export function loadConfigFileWithoutKeys(path: string, env: SwitchboardEnv): SwitchboardOptions {
  return readConfigFile(path, env, true);
}

function readConfigFile(
  path: string,
  env: SwitchboardEnv,
  keysUnused: boolean,
): SwitchboardOptions {
  let text: string;
  try {
    text = readBoundedFile(resolve(path), MAX_CONFIG_FILE_BYTES);
  } catch (error) {
    throw new SwitchboardConfigError(path, [
      `${path}: cannot read the switchboard config: ${messageOf(error)}`,
    ]);
  }
  const format = extname(path).toLowerCase() === '.json' ? 'json' : 'yaml';
  return parse(text, { source: path, format, env }, keysUnused);
}

/**
 * Parses, interpolates and validates a switchboard configuration text, as
 * {@link loadSwitchboardConfigFile} does for a file (for configurations kept elsewhere: a secret
 * store, a config map).
 *
 * @example
 * ```ts
 * const options = parseSwitchboardConfig(await secrets.get('switchboard'), {
 *   source: 'secret switchboard',
 * });
 * ```
 */
export function parseSwitchboardConfig(
  text: string,
  options: ParseSwitchboardConfigOptions,
): SwitchboardOptions {
  return parse(text, options, false);
}

function parse(
  text: string,
  { source, format = 'yaml', env = process.env }: ParseSwitchboardConfigOptions,
  keysUnused: boolean,
): SwitchboardOptions {
  const lines = new LineCounter();
  // Merge keys (`<<: *east`) let deployments share fields through anchors.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, merge: true });
  let data: unknown;
  if (format === 'json') {
    try {
      data = JSON.parse(text);
    } catch (error) {
      throw new SwitchboardConfigError(source, [
        jsonSyntaxProblem(source, text, error, doc, lines),
      ]);
    }
  } else {
    if (doc.errors.length > 0) {
      throw new SwitchboardConfigError(
        source,
        doc.errors.map((e) => {
          const at = lines.linePos(e.pos[0]);
          return `${source}:${at.line}:${at.col}: invalid YAML: ${firstLine(e.message)}`;
        }),
      );
    }
    const dangling = unresolvedAliases(doc, lines, source);
    if (dangling.length > 0) throw new SwitchboardConfigError(source, dangling);
    try {
      data = doc.toJS();
    } catch (error) {
      // Whatever else the YAML reader refuses only when it builds the values (a merge of a list).
      throw new SwitchboardConfigError(source, [`${source}: invalid YAML: ${messageOf(error)}`]);
    }
  }

  const lineOf = (path: readonly PropertyKey[]): string => {
    // For JSON the YAML reading serves only to find lines; it may disagree on invalid YAML.
    if (doc.errors.length > 0) return '';
    const node = doc.getIn(path as unknown[], true) as { range?: [number, number, number] } | null;
    const offset = node?.range?.[0] ?? (path.length > 0 ? findKeyOffset(doc, path) : undefined);
    return offset === undefined ? '' : ` (line ${lines.linePos(offset).line})`;
  };

  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new SwitchboardConfigError(source, [
      `${source}: expected a mapping at the top level, such as \`deployments: [...]\`, got ${describeValue(data)}`,
    ]);
  }

  const problems: string[] = [];
  const secrets = new Set<string>();
  // Paths whose `${VAR}` could not be read: their value is left out of the checks below, which
  // would only say again that it is not valid, while every other problem is still reported.
  const unread: PropertyKey[][] = [];
  const simulated = isSimulated(data as { simulate?: boolean }, env);
  const options = interpolate(data, [], {
    env,
    secrets,
    // Simulated, a deployment's endpoint and key are the simulation's: none needs to be set.
    standIn: simulated ? simulationStandIn : keysUnused ? keyStandIn : () => undefined,
    report: (path, message) => {
      unread.push(path);
      problems.push(`${source}: ${formatPath(path)} ${message}${lineOf(path)}`);
    },
  }) as Record<string, unknown>;
  // What a variable named as a secret held never reaches a message, wherever validation quotes it.
  const hide = (lines: string[]): string[] =>
    secrets.size === 0 ? lines : lines.map((line) => hideSecrets(line, secrets));
  for (const key of Object.keys(options)) {
    if (key in CODE_ONLY_KEYS) {
      problems.push(
        `${source}: ${key} cannot be set in a config file: set it in code, e.g. useFactory: (config) => ({ ...config, ${CODE_ONLY_KEYS[key]} })${lineOf([key])}`,
      );
    }
  }
  const codeOnly = new Set(Object.keys(CODE_ONLY_KEYS));
  const parsed = switchboardOptionsSchema.safeParse(options);
  if (!parsed.success) {
    const messages = describeIssues(parsed.error, options);
    parsed.error.issues.forEach((issue, i) => {
      const path =
        issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]!] : issue.path;
      if (unread.some((u) => startsWith(path, u)) || codeOnly.has(String(path[0]))) return;
      problems.push(`${source}: ${messages[i]}${lineOf(path)}`);
    });
  }
  if (problems.length === 0) {
    const cross = crossCheck(options as unknown as SwitchboardOptions);
    problems.push(...cross.map((p) => `${source}: ${formatProblem(p)}${lineOf(p.path)}`));
  }
  if (problems.length > 0) throw new SwitchboardConfigError(source, hide(problems));
  if (simulated) options.simulate = true;
  return options as unknown as SwitchboardOptions;
}

function jsonSyntaxProblem(
  source: string,
  text: string,
  error: unknown,
  doc: Document,
  lines: LineCounter,
): string {
  const message = messageOf(error);
  // Node reports an offset for most JSON errors, and none for some; the YAML reader of the same
  // text then usually points at the culprit.
  const position = /at position (\d+)/.exec(message);
  let offset: number | undefined;
  if (position) offset = Number(position[1]);
  else if (/end of JSON input/.test(message)) offset = text.length;
  else {
    const strict = parseDocument(text, { schema: 'json', lineCounter: new LineCounter() });
    offset = strict.errors[0]?.pos[0] ?? doc.errors[0]?.pos[0];
  }
  const at = lines.linePos(Math.min(offset ?? text.length, text.length));
  return `${source}:${at.line}:${at.col}: invalid JSON: ${message}`;
}

/**
 * Every alias (`*name`) that no anchor before it defines, with the field it stands for: the YAML
 * reader would throw a bare `ReferenceError` for the first one when it builds the values.
 */
function unresolvedAliases(doc: Document, lines: LineCounter, source: string): string[] {
  const problems: string[] = [];
  visit(doc, {
    Alias(_key, node, ancestry) {
      if (node.resolve(doc) !== undefined) return;
      const path: PropertyKey[] = [];
      ancestry.forEach((a, i) => {
        const next = ancestry[i + 1] ?? node;
        if (isPair(a)) path.push(isScalar(a.key) ? String(a.key.value) : String(a.key));
        else if (isSeq(a)) path.push(a.items.indexOf(next as never));
      });
      const line = node.range ? ` (line ${lines.linePos(node.range[0]).line})` : '';
      problems.push(
        `${source}: ${formatPath(path)} refers to *${node.source}, but no anchor &${node.source} comes before it${line}`,
      );
    },
  });
  return problems;
}

/** Offset of the key of the last path segment, for values the YAML tree has no node for. */
function findKeyOffset(doc: Document, path: readonly PropertyKey[]): number | undefined {
  const parent = doc.getIn(path.slice(0, -1) as unknown[], true) as {
    items?: Array<{ key?: { value?: unknown; range?: [number, number, number] } }>;
    range?: [number, number, number];
  } | null;
  const last = path[path.length - 1];
  const pair = parent?.items?.find((item) => item.key?.value === last);
  return pair?.key?.range?.[0] ?? parent?.range?.[0];
}

// Not `instanceof Error`: errors from Node's own modules may come from another realm (Jest).
function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(error);
}

function firstLine(message: string): string {
  return message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
}

function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'an empty document';
  if (Array.isArray(value)) return 'a list';
  return `a ${typeof value}`;
}

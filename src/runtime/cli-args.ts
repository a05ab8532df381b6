import { parseArgs } from 'node:util';
import type { CliOutput } from './cli-output';

/** The options of a command: each a flag (`boolean`) or one that takes a value (`string`). */
export type CliOptions = Readonly<Record<string, { readonly type: 'boolean' | 'string' }>>;

/**
 * A command line read: the options given, by name (a flag's value is `true`; an option whose
 * value is missing, or is the next option, has `undefined`), and the other arguments, in order.
 * `--help` and `-h` are the option `help`.
 */
interface CliArgs {
  readonly given: ReadonlyMap<string, string | true | undefined>;
  readonly positionals: readonly string[];
}

/**
 * Reads `args` (after the command's own name, when it is first) with Node's `util.parseArgs`,
 * leaving what each command says about a missing or wrong value to the command. Returns the
 * options given and the positional arguments, or the one problem that no command words its own
 * way: `unknown option --x`, or `--json takes no value`.
 *
 * @example
 * ```ts
 * const read = readCliArgs(['plan', 'week.jsonl', '--json'], 'plan', { json: { type: 'boolean' } });
 * // { given: Map { 'json' => true }, positionals: ['week.jsonl'] }
 * ```
 */
export function readCliArgs(
  args: readonly string[],
  command: string,
  options: CliOptions,
): CliArgs | { problem: string } {
  const { tokens } = parseArgs({
    args: args[0] === command ? args.slice(1) : [...args],
    options: { ...options, help: { type: 'boolean', short: 'h' } },
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const given = new Map<string, string | true | undefined>();
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === 'positional') positionals.push(token.value);
    if (token.kind !== 'option') continue;
    const type = token.name === 'help' ? 'boolean' : options[token.name]?.type;
    if (type === undefined) return { problem: `unknown option ${token.rawName}` };
    if (type === 'boolean') {
      if (token.value !== undefined) return { problem: `${token.rawName} takes no value` };
      given.set(token.name, true);
      continue;
    }
    // Without `=`, a next argument that is an option is not this one's value.
    const value = token.value;
    const missing = value === undefined || (!token.inlineValue && value.startsWith('-'));
    given.set(token.name, missing ? undefined : value);
  }
  return { given, positionals };
}

/** What {@link commandLine} needs to know of a command. */
interface CommandSpec {
  /** Its name, the first argument when it is given. */
  readonly command: string;
  readonly options: CliOptions;
  /** What `--help` prints. */
  readonly usage: string;
  /** The line a problem is told in; default: the problem, then the usage. */
  readonly say?: (problem: string) => string;
}

/**
 * {@link readCliArgs}, and what every command does first: `--help` (or `-h`) prints the usage and
 * the exit status is 0; an unknown option (or a value given to a flag) is told on stderr and the
 * exit status is 2. Returns the arguments read, or that exit status.
 *
 * @example
 * ```ts
 * const read = commandLine(args, { command: 'simulate', options, usage: USAGE }, output);
 * if (typeof read === 'number') return read;
 * ```
 */
export function commandLine(
  args: readonly string[],
  spec: CommandSpec,
  output: CliOutput,
): CliArgs | number {
  const read = readCliArgs(args, spec.command, spec.options);
  if ('problem' in read) {
    output.err(spec.say ? spec.say(read.problem) : `${read.problem}\n\n${spec.usage}`);
    return 2;
  }
  if (read.given.has('help')) {
    output.out(spec.usage);
    return 0;
  }
  return read;
}

/**
 * The three commands read their arguments with Node's util.parseArgs (`readCliArgs`) and keep
 * their own words for what is wrong: one line naming the option, exit status 2, nothing run.
 */
import { runDoctorCli } from '../../src/doctor/run';
import { runPlanCli } from '../../src/planning/run-plan';
import { readCliArgs } from '../../src/runtime/cli-args';
import type { CliOutput } from '../../src/runtime/cli-output';
import { runSimulateCli } from '../../src/simulate/run-simulate';

/** Runs a command and returns its status and the first line of what it wrote to stderr. */
async function run(
  command: (args: string[], output: CliOutput) => Promise<number>,
  args: string[],
): Promise<{ status: number; first: string; out: string }> {
  const err: string[] = [];
  const out: string[] = [];
  const status = await command(args, { out: (t) => out.push(t), err: (t) => err.push(t) });
  return { status, first: (err[0] ?? '').split('\n')[0]!, out: out.join('\n') };
}

const doctor = (args: string[], output: CliOutput) => runDoctorCli(args, output, {});
const plan = (args: string[], output: CliOutput) => runPlanCli(args, output, {});
// Resolved at once: a simulation that started would stop as soon as it printed.
const simulate = (args: string[], output: CliOutput) =>
  runSimulateCli(args, output, {}, Promise.resolve());

describe('readCliArgs', () => {
  const options = { json: { type: 'boolean' }, port: { type: 'string' } } as const;

  it('reads flags, values (inline or not) and positionals, after the command name', () => {
    const read = readCliArgs(
      ['simulate', 'a.yaml', '--json', '--port=1', 'b'],
      'simulate',
      options,
    );
    expect(read).toEqual({
      given: new Map<string, unknown>([
        ['json', true],
        ['port', '1'],
      ]),
      positionals: ['a.yaml', 'b'],
    });
  });

  it('a value that is missing, or is the next option, is undefined (the command says why)', () => {
    for (const args of [['--port'], ['--port', '--json'], ['--port', '-1']]) {
      const read = readCliArgs(args, 'x', options);
      expect('given' in read && read.given.has('port') && read.given.get('port')).toBeUndefined();
    }
    expect(readCliArgs(['--port=-1'], 'x', options)).toMatchObject({
      given: new Map([['port', '-1']]),
    });
  });

  it('names an unknown option, or a value given to a flag', () => {
    expect(readCliArgs(['--frobnicate'], 'x', options)).toEqual({
      problem: 'unknown option --frobnicate',
    });
    expect(readCliArgs(['-q'], 'x', options)).toEqual({ problem: 'unknown option -q' });
    expect(readCliArgs(['--json=yes'], 'x', options)).toEqual({
      problem: '--json takes no value',
    });
  });
});

describe('the commands keep their words', () => {
  it.each([
    [['doctor', 'sb.yaml', '--frobnicate'], 'unknown option --frobnicate', doctor],
    [['doctor', 'sb.yaml', '--token'], '--token needs a value', doctor],
    [['doctor', 'sb.yaml', '--token', '--json'], '--token needs a value', doctor],
    [['doctor', 'sb.yaml', '--scope'], '--scope needs a value', doctor],
    [
      ['doctor', 'sb.yaml', '--timeout', '1e10'],
      '--timeout must be a positive number of milliseconds, at most 2147483647',
      doctor,
    ],
    [
      ['doctor', 'sb.yaml', '--timeout'],
      '--timeout must be a positive number of milliseconds, at most 2147483647',
      doctor,
    ],
    [
      ['simulate', 'sb.yaml', '--port', 'x'],
      '--port must be a whole number from 0 to 65535',
      simulate,
    ],
    [['simulate', 'sb.yaml', '--port'], '--port must be a whole number from 0 to 65535', simulate],
    [
      ['simulate', 'sb.yaml', '--latency', '-1'],
      '--latency must be a whole number of milliseconds',
      simulate,
    ],
    [['simulate', 'sb.yaml', '--verbose'], 'unknown option --verbose', simulate],
    [
      ['plan', 't.jsonl', '--config', 'sb.yaml', '--scale'],
      '--scale must be a number from 0.001 to 1000 (nestjs-switchboard plan --help)',
      plan,
    ],
    [
      ['plan', 't.jsonl', '--config', 'sb.yaml', '--html'],
      '--html needs a file name (nestjs-switchboard plan --help)',
      plan,
    ],
    [
      ['plan', 't.jsonl', '--config'],
      '--config <file> is required (nestjs-switchboard plan --help)',
      plan,
    ],
    [
      ['plan', '--config', 'sb.yaml'],
      'name one traffic file (nestjs-switchboard plan --help)',
      plan,
    ],
    [
      ['plan', 't.jsonl', '--json=1'],
      '--json takes no value (nestjs-switchboard plan --help)',
      plan,
    ],
  ] as const)('%j: %s', async (args, line, command) => {
    const { status, first } = await run(command, [...args]);
    expect(status).toBe(2);
    expect(first).toBe(line);
  });

  it.each([
    [doctor, 'doctor'],
    [plan, 'plan'],
    [simulate, 'simulate'],
  ] as const)('%#: -h and --help print the usage of %s, exit 0', async (command, name) => {
    for (const flag of ['-h', '--help']) {
      const { status, out } = await run(command, [name, flag]);
      expect(status).toBe(0);
      expect(out).toMatch(new RegExp(`^Usage: nestjs-switchboard ${name} `));
    }
  });
});

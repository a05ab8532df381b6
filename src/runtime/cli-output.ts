/**
 * Where a command of the package's CLI (`doctor`, `plan`) writes; process.stdout / stderr by
 * default, a collector in tests.
 *
 * @example
 * ```ts
 * const lines: string[] = [];
 * const output: CliOutput = { out: (t) => lines.push(t), err: (t) => lines.push(t) };
 * ```
 */
export interface CliOutput {
  out(text: string): void;
  err(text: string): void;
}

/** Standard output and error, one line per call. */
export const STDIO: CliOutput = {
  out: (text) => void process.stdout.write(`${text}\n`),
  err: (text) => void process.stderr.write(`${text}\n`),
};

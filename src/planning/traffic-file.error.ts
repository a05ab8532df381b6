/**
 * A traffic file the planner cannot read: the message names the file, the line and what is wrong
 * with it, for the user to fix; it is never a bug of the planner.
 *
 * @example
 * ```ts
 * throw new TrafficFileError('traffic.jsonl', 12, '"input_tokens" must be a whole number >= 0');
 * // traffic.jsonl:12: "input_tokens" must be a whole number >= 0
 * ```
 */
export class TrafficFileError extends Error {
  constructor(
    readonly file: string,
    /** 1-based; 0 when the problem is the file's, not a line's. */
    readonly line: number,
    problem: string,
  ) {
    super(line > 0 ? `${file}:${line}: ${problem}` : `${file}: ${problem}`);
    this.name = 'TrafficFileError';
  }
}

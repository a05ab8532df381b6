import { SwitchboardError } from '../switchboard.error';

/**
 * A configuration file or environment that cannot become switchboard options. Every problem is
 * one line that names the file (or the environment variable), the field path and what is
 * expected; the message lists them all.
 *
 * @example
 * ```ts
 * try {
 *   loadSwitchboardConfigFile('switchboard.yaml');
 * } catch (err) {
 *   if (err instanceof SwitchboardConfigError) console.error(err.problems.join('\n'));
 *   // switchboard.yaml: deployments[1].models[0].tpm must be a non-negative integer (0 = unlimited) (line 14)
 * }
 * ```
 */
export class SwitchboardConfigError extends SwitchboardError {
  /**
   * @param source the file as it was named (or `environment`)
   * @param problems one line per problem, each starting with the source
   */
  constructor(
    readonly source: string,
    readonly problems: readonly string[],
  ) {
    super(
      problems.length === 1
        ? problems[0]!
        : `Invalid switchboard configuration in ${source} (${problems.length} problems):\n${problems.map((p) => `  ${p}`).join('\n')}`,
      { code: 'config' },
    );
  }
}

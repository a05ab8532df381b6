/** The environment variable that turns the simulation on where the options do not say. */
export const SIMULATE_ENV = 'SWITCHBOARD_SIMULATE';

/**
 * Whether options are served by a simulation: their `simulate` when set, else
 * `SWITCHBOARD_SIMULATE=1` (or `true`) in the environment.
 *
 * @example
 * ```ts
 * isSimulated({ deployments }, { SWITCHBOARD_SIMULATE: '1' }); // true
 * ```
 */
export function isSimulated(
  options: { simulate?: unknown },
  env: Readonly<Record<string, string | undefined>> = process.env,
): boolean {
  if (typeof options.simulate === 'boolean') return options.simulate;
  const value = env[SIMULATE_ENV]?.trim().toLowerCase();
  return value === '1' || value === 'true';
}

/**
 * What a health indicator reports under its key: terminus' `HealthIndicatorResult`, spelled out
 * here so that the types do not need `@nestjs/terminus` installed.
 *
 * @example
 * ```ts
 * const result: HealthResult<'switchboard'> = { switchboard: { status: 'up' } };
 * ```
 */
export type HealthResult<
  Key extends string = string,
  Status extends 'up' | 'down' = 'up' | 'down',
  Details extends object = Record<string, unknown>,
> = Record<Key, { status: Status } & Details>;

/**
 * The part of terminus' `HealthIndicatorService` that the switchboard's indicator uses.
 *
 * @example
 * ```ts
 * const results: HealthResults = new HealthIndicatorService(); // from @nestjs/terminus
 * results.check('switchboard').up({ models: {} });
 * ```
 */
export interface HealthResults {
  check<const Key extends string>(
    key: Key,
  ): {
    up<T extends Record<string, unknown>>(data: T): HealthResult<Key, 'up', T>;
    down<T extends Record<string, unknown>>(data: T): HealthResult<Key, 'down', T>;
  };
}

/**
 * @internal Injection token of the {@link HealthResults} the indicator uses.
 *
 * @example
 * ```ts
 * Test.createTestingModule(...).overrideProvider(SWITCHBOARD_HEALTH_RESULTS).useValue(results);
 * ```
 */
// Symbol.for: the ESM and the CommonJS build, if both are loaded, agree on the token.
export const SWITCHBOARD_HEALTH_RESULTS = Symbol.for('nestjs-switchboard.health-results');

/**
 * Builds results the way terminus' `HealthIndicatorService` does, for applications without
 * `@nestjs/terminus`.
 *
 * @example
 * ```ts
 * plainHealthResults.check('switchboard').down({ message: 'no healthy deployment' });
 * // { switchboard: { message: 'no healthy deployment', status: 'down' } }
 * ```
 */
export const plainHealthResults: HealthResults = {
  check: <const Key extends string>(key: Key) => ({
    up: <T extends Record<string, unknown>>(data: T) =>
      ({ [key]: { ...data, status: 'up' } }) as HealthResult<Key, 'up', T>,
    down: <T extends Record<string, unknown>>(data: T) =>
      ({ [key]: { ...data, status: 'down' } }) as HealthResult<Key, 'down', T>,
  }),
};

/**
 * Terminus' own `HealthIndicatorService` when `@nestjs/terminus` is installed, else
 * {@link plainHealthResults}. The service has no dependencies and no state, so one is built here:
 * `TerminusModule` is not global, and the switchboard must not require it.
 *
 * @example
 * ```ts
 * { provide: SWITCHBOARD_HEALTH_RESULTS, useFactory: loadHealthResults }
 * ```
 */
export async function loadHealthResults(): Promise<HealthResults> {
  try {
    const { HealthIndicatorService } = await import('@nestjs/terminus');
    return new HealthIndicatorService();
  } catch (error) {
    if (isMissing(error, '@nestjs/terminus')) return plainHealthResults;
    throw error;
  }
}

/** True when `error` says that `pkg` itself is not installed (not one of its dependencies). */
function isMissing(error: unknown, pkg: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  // require() says MODULE_NOT_FOUND, import() (the ESM build) ERR_MODULE_NOT_FOUND.
  return (
    (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') &&
    typeof message === 'string' &&
    message.includes(`'${pkg}'`)
  );
}

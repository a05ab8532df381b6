/**
 * The short window an upstream enforces requests over: Azure OpenAI evaluates RPM "typically
 * over 1 or 10 seconds", allowing `rpm / 60` or `rpm / 6` there.
 *
 * @example
 * ```ts
 * const window: RequestWindow = '1s'; // 600 RPM: 10 requests a second
 * ```
 */
export type RequestWindow = '1s' | '10s';

/**
 * The requests `rpm` allows in `window`, at least 1.
 *
 * @example
 * ```ts
 * shortLimit(600, '1s'); // 10
 * shortLimit(120, '10s'); // 20
 * ```
 */
export function shortLimit(rpm: number, window: RequestWindow): number {
  const limit = Math.floor(rpm / (window === '1s' ? 60 : 6));
  return limit > 1 ? limit : 1;
}

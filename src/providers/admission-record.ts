import type { Admission } from '../quota/admission';

/**
 * A call's admission charge with every field the quota may set later present from the start, so
 * that every call's charge has one shape: a field added to an object later gives it a new shape,
 * which V8 drops once no call holding it is in flight, taking the code built on it along.
 *
 * @example
 * ```ts
 * admissionRecord(12, 0, 1); // { input: 12, output: 0, uncapped: 1, ... }
 * ```
 */
export function admissionRecord(
  input: number,
  output: number,
  uncapped?: number,
  cachePrefix?: Admission['cachePrefix'],
): Admission {
  return {
    input,
    output,
    reserve: undefined,
    sentTokens: undefined,
    sentRequests: undefined,
    sentInput: undefined,
    sentOutput: undefined,
    uncapped,
    cachePrefix,
    askedInput: undefined,
    askedOutput: undefined,
    slot: undefined,
  };
}

/**
 * One instance of each class a call makes, kept for the life of the process.
 *
 * V8 keeps the shape (map) of a class's instances alive only while some instance is, and throws
 * away every optimized function built on a shape that died. A call's objects live only while it
 * is in flight, so after a full collection with no call in flight (an idle spell, a fresh
 * switchboard), the next calls would start from unoptimized code on every step of their path.
 * One kept instance per class keeps its shape, and the optimized code with it. A kept instance
 * is made of stand-ins, never of a switchboard's objects, so it holds nothing else alive.
 */
const kept: object[] = [];

/**
 * Keeps `make()`: call it once per class, after the class's instances took their final shape
 * (after a first call ran through it: a field first set to `0` and later to a fraction changes
 * the shape once).
 *
 * @example
 * ```ts
 * if (!shapeKept) shapeKept = keepShape(() => new Attempt(...ATTEMPT_STAND_INS));
 * ```
 */
export function keepShape(make: () => object): true {
  kept.push(make());
  return true;
}

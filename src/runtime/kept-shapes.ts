/**
 * One instance of each class a call makes, kept for the life of the process.
 *
 * V8 keeps the shape (map) of a class's instances alive only while some instance is, and throws
 * away every optimized function built on a shape that died. A call's objects live only while it
 * is in flight, so after a full collection with no call in flight (an idle spell, a fresh
 * switchboard), the next calls would start from unoptimized code on every step of their path.
 * One kept instance per class keeps its shape, and the optimized code with it. A kept instance
 * is made of stand-ins, never of a switchboard's objects, so it holds nothing else alive; the
 * shapes only traffic settles are kept by the last closed switchboards ({@link keepClosed}).
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

/** The switchboards closed last, newest first (see {@link keepClosed}). */
const closed: object[] = [];

/** How many closed switchboards are kept: a process alternating two configurations keeps both. */
const KEPT_CLOSED = 2;

/**
 * Keeps `switchboard`, just closed, until two more have closed. A switchboard's objects (its
 * router, registry, deployments, counters, tenants) have shapes no stand-in can copy: their fields
 * settle on their final kinds only under traffic. When the last switchboard that had them is
 * gone, a full collection takes those shapes and throws away the optimized code of the whole call
 * path, so the next switchboard's first calls (a process that builds a fresh switchboard, a test
 * suite) run unoptimized. The last two closed are kept, so that a process alternating two
 * configurations (one with tenants, one without) keeps both kinds; each has no timer, socket or
 * store connection left, and its response cache was emptied at its close.
 *
 * @example
 * ```ts
 * keepClosed(this); // in Switchboard.close()
 * ```
 */
export function keepClosed(switchboard: object): void {
  closed.unshift(switchboard);
  closed.length = Math.min(closed.length, KEPT_CLOSED);
}

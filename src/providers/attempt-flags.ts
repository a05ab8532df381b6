/**
 * What has happened to an attempt, as bits of one field (`Attempt.flags`): an attempt is made for
 * every call, and one small integer costs less than five fields of booleans.
 *
 * @example
 * ```ts
 * if ((this.flags & SETTLED) !== 0) return; // told its outcome already
 * ```
 */
/** It settled: exactly one outcome was told. */
export const SETTLED = 1;
/** The head of the request in flight came: its data is what the SDK's promises give next. */
export const HEAD_CAME = 2;
/** Its deadline passed. */
export const TIMED_OUT = 4;
/** It was sent a second time, after a stale pooled socket lost the first. */
export const RESENT = 8;
/** It holds one of the model's slots in flight until it is released. */
export const HOLDING = 16;
/** It listens to its caller's signal, until it is released or the signal aborts. */
export const LISTENING = 32;

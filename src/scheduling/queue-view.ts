import type { CallTags, Lane } from './lanes';

/**
 * What one try of a waiting call answers: its target (it has its room), or how long (ms) until
 * room is expected, with whatever else its refusal says (`R`: a tenant's verdict names the limit).
 *
 * @example
 * ```ts
 * const t: Turn<Deployment> = { waitMs: 250 };
 * ```
 */
export type Turn<T, R extends { waitMs: number } = { waitMs: number }> = { target: T } | R;

/**
 * Calls waiting per line and lane when `maxQueued` is not set: each waiter holds its request,
 * so a line without a bound is memory a burst of callers can take.
 */
export const DEFAULT_MAX_QUEUED = 1_000;

/**
 * Options of a {@link CapacityQueue}.
 *
 * @example
 * ```ts
 * const o: CapacityQueueOptions = { maxWait: 5_000, batchMaxWait: 60_000, maxQueued: 1_000 };
 * ```
 */
export interface CapacityQueueOptions {
  maxWait: number;
  /** The longest wait of a batch call; default `maxWait`. */
  batchMaxWait?: number;
  /** Calls waiting per line and lane at most; default {@link DEFAULT_MAX_QUEUED}. */
  maxQueued?: number;
  clock?: () => number;
}

/**
 * How a call waits: its lane and tenant (default interactive, no tenant), its cost, its errors.
 *
 * @example
 * ```ts
 * const o: WaitOptions = { signal, onAbort: () => new APIUserAbortError(), onTimeout: (ms) => tooLong(ms) };
 * ```
 */
export interface WaitOptions<R = unknown> {
  signal?: AbortSignal | null;
  /**
   * The error of a call that waited its lane's longest wait in vain, after `waitedMs`: `last` is
   * the refusal of its last try (none when it never came to the head).
   */
  onTimeout: (waitedMs: number, last: R | undefined) => unknown;
  onAbort: () => unknown;
  tags?: CallTags;
  /** Tokens of the call's admission charge, for fairness across tenants; default 1. */
  cost?: number;
  /** Told when the call leaves the line with a target, after `waitedMs`. */
  onAdmit?: (waitedMs: number) => void;
}

/**
 * The switchboard's queue as its readers see it (`sb.queue`, a status page, the metrics): who
 * waits for which model, in which lane, for how long. The lines themselves are internal.
 *
 * @example
 * ```ts
 * const queue = sb.queue;
 * if (queue) console.log(`${queue.length('gpt-4o')} waiting, ${queue.longestWait('gpt-4o')} ms`);
 * ```
 */
export interface QueueView {
  /** The longest wait in ms (of an interactive call). */
  readonly maxWait: number;
  /** The longest wait in ms of a call in `lane`. */
  maxWaitOf(lane: Lane): number;
  /** Calls waiting for `model`, in `lane` or in both. */
  length(model: string, lane?: Lane): number;
  /** How long (ms) the longest-waiting call for `model` has waited; 0 when none waits. */
  longestWait(model: string, lane?: Lane): number;
  /** Calls waiting for `model` per lane and tenant (lanes with nobody waiting left out). */
  waiting(model: string): Partial<Record<Lane, ReadonlyMap<string, number>>>;
  /** The models with calls waiting. */
  models(): IterableIterator<string>;
  /**
   * Let `model`'s waiting calls try for room now rather than when it was expected (after an
   * injected clock moved, say); the switchboard does so itself whenever it frees room.
   */
  kick(model: string): void;
}

/**
 * Waiting for room instead of failing fast when no deployment of a model has room for a call.
 *
 * @example
 * ```ts
 * const queue: QueueOptions = { maxWait: 5_000, maxQueued: 1_000 };
 * ```
 */
export interface QueueOptions {
  /** Longest wait in ms; past it the call fails with the SDK's `RateLimitError`. */
  maxWait: number;
  /** Most calls waiting per model and lane; one more fails at once. Default 1000. */
  maxQueued?: number;
  /** Longest wait in ms of a `lane: 'batch'` call. Default `maxWait`. */
  batchMaxWait?: number;
  /**
   * Share (0 to < 1) of each limit that batch calls leave free while interactive traffic is
   * present (an interactive call waits, or one was sent within `headroomHold`). Without
   * interactive traffic batch calls take every limit whole. Default 0.15.
   */
  batchHeadroom?: number;
  /** ms after the last interactive call was sent during which batch calls keep the headroom free. Default 5 000. */
  headroomHold?: number;
}

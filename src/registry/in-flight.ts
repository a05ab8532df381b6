/**
 * A model's calls in flight on one deployment, read-only: what a status page or a selector reads.
 *
 * @example
 * ```ts
 * const { count, cap } = deployment.models.get('gpt-4o')!.inFlightView;
 * console.log(cap > 0 ? `${count} of ${cap} in flight` : `${count} in flight`);
 * ```
 */
export interface InFlightView {
  /** Calls in flight now. */
  readonly count: number;
  /** The configured `maxInFlight` cap, 0 when there is none. */
  readonly cap: number;
  /** True while one more call may be sent. */
  hasRoom(): boolean;
}

/**
 * Calls of one model on one deployment that were sent and have not ended, against the model's
 * `maxInFlight` cap. A call counts from the moment it is sent until its answer is read, it fails,
 * or (for a stream) the stream ends, breaks off or is aborted.
 *
 * `onFree` hears when a call ends at the cap, so that calls waiting for a slot can be routed
 * again; without a cap nothing is told and {@link hasRoom} is always true.
 *
 * @example
 * ```ts
 * const calls = new InFlight(2);
 * calls.start(); calls.start();
 * calls.hasRoom(); // false: two in flight, the cap is 2
 * calls.end();
 * calls.hasRoom(); // true
 * ```
 */
export class InFlight implements InFlightView {
  /** Calls in flight now. */
  private n = 0;
  /** Whether any call was ever sent (metrics report a model from then on). */
  private used = false;
  /** The cap; `Infinity` when none is configured. */
  private readonly max: number;

  constructor(
    /** The most calls in flight at once; `undefined` or 0: no cap. */
    cap: number | undefined = undefined,
    private readonly onFree: (() => void) | undefined = undefined,
  ) {
    this.max = cap === undefined || cap <= 0 ? Infinity : cap;
  }

  /** Calls in flight now. */
  get count(): number {
    return this.n;
  }

  /** The configured cap, 0 when there is none. */
  get cap(): number {
    return this.max === Infinity ? 0 : this.max;
  }

  /** True once a call was sent, or from the start when a cap is configured. */
  get reported(): boolean {
    return this.used || this.max !== Infinity;
  }

  /** True while one more call may be sent. */
  hasRoom(): boolean {
    return this.n < this.max;
  }

  /** A call was sent. */
  start(): void {
    this.n++;
    this.used = true;
  }

  /** A call ended; at the cap, a slot is now free and `onFree` hears it. */
  end(): void {
    if (this.n === 0) return;
    this.n--;
    if (this.n === this.max - 1) this.onFree?.();
  }
}

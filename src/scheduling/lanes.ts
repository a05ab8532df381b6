import type { Admission } from '../quota/admission';

/**
 * A call's lane: `interactive` (the default: someone is waiting for the answer) or `batch`
 * (a job that can wait). Interactive calls are admitted and dequeued first; batch calls leave
 * headroom for them while interactive traffic is present.
 */
export type Lane = 'interactive' | 'batch';

/** The lanes, in the order they are served. */
export const LANES: readonly Lane[] = Object.freeze(['interactive', 'batch']);

/** What the scheduler knows of a call besides its request: its lane and its tenant's key. */
export interface CallTags {
  readonly lane: Lane;
  /** The tenant's key ('' for calls that name none); long ids are kept as their hash. */
  readonly tenant: string;
}

/**
 * The tags of a call that names no tenant, per lane; a call that names neither lane nor tenant
 * has `UNTAGGED` (interactive). Shared frozen objects, so reading a plain call's tags allocates
 * nothing.
 *
 * @example
 * ```ts
 * LANE_TAGS.batch; // { lane: 'batch', tenant: '' }
 * ```
 */
export const LANE_TAGS: Readonly<Record<Lane, CallTags>> = Object.freeze({
  interactive: Object.freeze({ lane: 'interactive', tenant: '' }),
  batch: Object.freeze({ lane: 'batch', tenant: '' }),
});

/** The tags of a call that names neither lane nor tenant. */
export const UNTAGGED: CallTags = LANE_TAGS.interactive;

/** Default share of each limit that batch calls leave free while interactive traffic is present. */
const DEFAULT_BATCH_HEADROOM = 0.15;

/**
 * How long (ms) interactive traffic counts as present after the last interactive call was sent,
 * by default: long enough to span the pauses of a person at a chat, short enough that a batch
 * job gets the whole capacity soon after they leave.
 */
const DEFAULT_HEADROOM_HOLD = 5_000;

/**
 * Per model, when interactive traffic was last seen: an interactive call sent, or waiting. While
 * it is present (an interactive call waits, or one was sent within `hold` ms), batch calls are
 * admitted only within `1 - headroom` of each limit; otherwise they take the whole capacity.
 * One entry per model that ever took an interactive call: bounded by the configuration.
 *
 * @example
 * ```ts
 * const lanes = new LaneActivity({ headroom: 0.15, hold: 5_000 });
 * lanes.sent('gpt-4o');
 * lanes.admissionFor('gpt-4o', 'batch', { input: 900, output: 256 }); // { ..., reserve: 0.15 }
 * ```
 */
export class LaneActivity {
  private readonly lastSent = new Map<string, number>();
  readonly headroom: number;
  readonly hold: number;
  private readonly clock: () => number;

  constructor(o: {
    headroom?: number;
    hold?: number;
    clock?: () => number;
    /** Interactive calls waiting for `model` (the queue's count). */
    waiting?: (model: string) => number;
  }) {
    this.headroom = o.headroom ?? DEFAULT_BATCH_HEADROOM;
    this.hold = o.hold ?? DEFAULT_HEADROOM_HOLD;
    this.clock = o.clock ?? Date.now;
    this.waiting = o.waiting ?? (() => 0);
  }

  private readonly waiting: (model: string) => number;

  /** An interactive call for `model` was sent, at `now` (epoch ms; the clock's reading by default). */
  sent(model: string, now: number = this.clock()): void {
    this.lastSent.set(model, now);
  }

  /** ms for which interactive traffic for `model` is still present; 0 when it is not. */
  presentFor(model: string): number {
    if (this.waiting(model) > 0) return Math.max(1, this.hold);
    const last = this.lastSent.get(model);
    if (last === undefined) return 0;
    const left = last + this.hold - this.clock();
    return left > 0 ? left : 0;
  }

  /**
   * The charge a call of `lane` must fit: a batch call's carries the headroom it leaves while
   * interactive traffic is present; otherwise `admission` itself.
   */
  admissionFor(model: string, lane: Lane, admission: Admission): Admission {
    if (lane !== 'batch' || this.headroom <= 0 || this.presentFor(model) === 0) return admission;
    return { input: admission.input, output: admission.output, reserve: this.headroom };
  }
}

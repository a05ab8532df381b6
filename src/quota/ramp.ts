import { DRAIN_HOLD_MS } from './drain-count';

/**
 * How a bucket's ramp runs, as a kind of upstream's rules choose it: the share of each limit our
 * own calls may hold in the bucket at first (`start`), how long it takes to widen to the whole
 * bucket (`ms`, linearly), and after how long without a call it starts again (`idleMs`).
 *
 * @example
 * ```ts
 * const plan: RampPlan = { start: 1 / 6, ms: 30_000, idleMs: 120_000 };
 * ```
 */
export interface RampPlan {
  readonly start: number;
  readonly ms: number;
  readonly idleMs: number;
}

/** ms a bucket takes to refill: its limit is per minute. */
const REFILL_MS = 60_000;

/**
 * The limits a ramp may hold: those kept as token buckets.
 *
 * @example
 * ```ts
 * const unit: RampedUnit = 'input'; // Anthropic's itpm
 * ```
 */
export type RampedUnit = 'tokens' | 'input' | 'output';

/**
 * The ramp of one model on one deployment, over the limits its upstream keeps as buckets (OpenAI's
 * tokens, Anthropic's input tokens): a bucket starts full, and both vendors' buckets would take a
 * whole one in one instant, but Anthropic documents acceleration limits (429s on sharp increases
 * in usage) without numbers. So a cold start, a restart, or the first calls after `idleMs` without
 * one (a queue's backlog released at once included) may hold only `start` of each limit in the
 * bucket, widening linearly to all of it over `ms`. It bounds this instance's own count alone:
 * others' usage is the upstream's to count. The first call of a ramp passes whatever its size and
 * the step is counted above it (a prompt cached by that call leaves the next ones nearly free),
 * and a call finding none of ours in the bucket always passes: none is held for good.
 *
 * @example
 * ```ts
 * const ramp = new Ramp({ start: 1 / 6, ms: 30_000, idleMs: 120_000 });
 * ramp.room('tokens', 60_000, 0, now); // Infinity: nothing of ours in the bucket
 * ramp.admitted('tokens', 500, now);
 * ramp.room('tokens', 60_000, 500, now); // 10 000: a sixth of the bucket above the first call
 * ```
 */
export class Ramp {
  /** When the ramp began (the first call after a cold start or an idle spell). */
  private since = 0;
  /** When the last call was sent (-Infinity: never, cold). */
  private last = -Infinity;
  /** Per limit, the charge of the ramp's first call (the step is counted above it). */
  private readonly first: Record<RampedUnit, number> = { tokens: 0, input: 0, output: 0 };
  /** Which limits' first call this ramp saw. */
  private readonly seen = new Set<RampedUnit>();

  constructor(readonly plan: RampPlan) {}

  /** The share of a limit our calls may hold at `now` (1: the ramp is over). */
  share(now: number): number {
    const { start, ms, idleMs } = this.plan;
    // Idle (or cold): the next call starts the ramp again.
    if (now - this.last > idleMs) return start;
    const t = now - this.since;
    return t >= ms ? 1 : start + ((1 - start) * t) / ms;
  }

  /** A call charging `unit` this `charge` was sent at `now`: after an idle spell it starts the ramp. */
  admitted(unit: RampedUnit, charge: number, now: number): void {
    if (now - this.last > this.plan.idleMs) {
      this.since = now;
      this.seen.clear();
    }
    if (!this.seen.has(unit)) {
      this.seen.add(unit);
      this.first[unit] = charge;
    }
    if (now > this.last) this.last = now;
  }

  /**
   * The largest charge of `unit` a bucket of `limit` holding `own` of ours admits at `now` by the
   * ramp.
   */
  room(unit: RampedUnit, limit: number, own: number, now: number): number {
    if (own <= 0) return Infinity;
    const share = this.share(now);
    if (share >= 1) return Infinity;
    // Idle or cold, the next call is a ramp's first.
    const idle = now - this.last > this.plan.idleMs;
    const first = !idle && this.seen.has(unit) ? this.first[unit] : 0;
    return first + limit * share - own;
  }

  /** When the ramp's room can change by time alone (see `LimitCounter.changesAt`). */
  changesAt(own: number, now: number): number {
    return own > 0 && this.share(now) < 1 ? now + DRAIN_HOLD_MS : Infinity;
  }

  /**
   * ms from `now` until a charge of `charge` fits the ramp of a bucket of `limit` holding `own` of
   * ours, which drains at the limit a minute: the sooner of the step widening to it, the ramp
   * ending, and our count draining out.
   */
  wait(unit: RampedUnit, limit: number, own: number, charge: number, now: number): number {
    const room = this.room(unit, limit, own, now);
    if (room >= charge) return 0;
    const { start, ms, idleMs } = this.plan;
    const drain = limit / REFILL_MS;
    const untilEmpty = drain > 0 ? own / drain : Infinity;
    // Idle, the step widens only once a call starts it again.
    const idle = now - this.last > idleMs;
    const widen = idle ? 0 : (limit * (1 - start)) / ms;
    const untilEnd = idle ? Infinity : Math.max(0, this.since + ms - now);
    const rate = widen + drain;
    const untilFits = rate > 0 ? (charge - room) / rate : Infinity;
    return Math.max(0, Math.min(untilFits, untilEnd, untilEmpty));
  }
}

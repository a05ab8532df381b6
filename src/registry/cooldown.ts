import { DEFAULT_MAX_COOLDOWN } from '../runtime/upstream-numbers';

/** Default cooldown (ms) after a 429 or a dropped connection. */
export const DEFAULT_COOLDOWN = 10_000;

/**
 * Why a model cools: marked down by hand (`manual`), after a 429 or a cooldown another instance
 * shared (`quota`: room comes back by itself), or after faults (`fault`: no promise of room).
 */
type CooldownKind = 'manual' | 'quota' | 'fault';

/**
 * The kind of cooldown a mark-down's `reason` starts: none is a mark-down by hand; the failure
 * classification's reasons for a 429 say room comes back by itself.
 *
 * @example
 * ```ts
 * cooldownKind('rate_limit'); // 'quota'
 * ```
 */
export function cooldownKind(reason: string | undefined): CooldownKind {
  if (reason === undefined) return 'manual';
  const quota = reason === 'rate_limit' || reason.startsWith('quota exhausted');
  return quota ? 'quota' : 'fault';
}

/**
 * One model's cooldown: until when, why, and the cap every cooldown gets whatever its source
 * (upstream `retry-after`, the configured `cooldown`, a mark-down by hand, a shared store).
 *
 * @example
 * ```ts
 * const cooldown = new Cooldown(60_000);
 * cooldown.extend(Date.now(), 10 * 86_400_000, 'quota'); // capped at one minute
 * cooldown.remaining(Date.now()); // 60000
 * ```
 */
export class Cooldown {
  /** Epoch ms at which it ends; 0 when not cooling. */
  private end = 0;
  private why: CooldownKind = 'fault';

  constructor(
    /** The longest cooldown (ms). */
    readonly max: number = DEFAULT_MAX_COOLDOWN,
  ) {}

  /** Why it cools (meaningful while {@link at} says it does). */
  get kind(): CooldownKind {
    return this.why;
  }

  /** Whether it cools at `now`; one that has ended is forgotten. */
  at(now: number): boolean {
    if (this.end === 0) return false;
    if (now < this.end) return true;
    this.end = 0;
    return false;
  }

  /** Epoch ms at which it ends, 0 when not cooling at `now`. */
  until(now: number): number {
    return this.at(now) ? this.end : 0;
  }

  /** ms left at `now` (0 when not cooling). */
  remaining(now: number): number {
    return this.at(now) ? this.end - now : 0;
  }

  /**
   * Cool for `ms` from `now` (capped by {@link max}; not a number or below 0 counts as 0), unless
   * a cooldown that ends later runs. Returns the new end, or 0 when the running one was kept.
   */
  extend(now: number, ms: number, kind: CooldownKind): number {
    const span = ms > 0 ? (ms < this.max ? ms : this.max) : 0;
    const end = now + span;
    if (end <= this.end) return 0;
    this.end = end;
    this.why = kind;
    return end;
  }

  /** Take a cooldown ending at `until` (epoch ms) from elsewhere, capped by {@link max} from `now`. */
  restore(until: number, now: number, kind: CooldownKind): void {
    if (!(until > now)) {
      this.end = 0;
      return;
    }
    const cap = now + this.max;
    this.end = until < cap ? until : cap;
    this.why = kind;
  }

  /** End it now; returns true when it was running. */
  clear(): boolean {
    const was = this.end !== 0;
    this.end = 0;
    return was;
  }
}

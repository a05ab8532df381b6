/** Per-key limits: requests per minute and calls in flight; absent = none. */
export interface KeyLimitOptions {
  rpm?: number;
  maxInFlight?: number;
  /** Clock in ms (tests). Default `Date.now`. */
  now?: () => number;
}

/** What {@link KeyLimits.admit} answers: a release for the call, or why not and for how long. */
export type KeyAdmission =
  { ok: true; release: () => void } | { ok: false; reason: string; retryAfterMs: number };

const MINUTE = 60_000;

/**
 * Requests per minute (a sliding minute: the times of the last `rpm` requests) and calls in
 * flight, per key, so that one client cannot spend every deployment's quota for the others. Each
 * key holds at most `rpm` times: memory is bounded by the number of keys.
 *
 * @example
 * ```ts
 * const limits = new KeyLimits({ rpm: 60, maxInFlight: 4 });
 * const a = limits.admit(0);
 * if (a.ok) a.release(); // once the response is written
 * ```
 */
export class KeyLimits {
  private readonly recent = new Map<number, number[]>();
  private readonly inFlight = new Map<number, number>();
  private readonly now: () => number;

  constructor(private readonly options: KeyLimitOptions = {}) {
    for (const [name, value] of Object.entries({
      rpm: options.rpm,
      maxInFlight: options.maxInFlight,
    })) {
      if (value !== undefined && !(Number.isInteger(value) && value >= 1)) {
        throw new RangeError(`${name} must be a positive integer, got ${String(value)}`);
      }
    }
    this.now = options.now ?? Date.now;
  }

  /** Whether any limit is set. */
  get enabled(): boolean {
    return this.options.rpm !== undefined || this.options.maxInFlight !== undefined;
  }

  /** Admits one call of key `key` (the key's index), or says why not and when to retry. */
  admit(key: number): KeyAdmission {
    const { rpm, maxInFlight } = this.options;
    const flying = this.inFlight.get(key) ?? 0;
    if (maxInFlight !== undefined && flying >= maxInFlight) {
      return {
        ok: false,
        reason: `This key has ${flying} calls in flight, its limit`,
        retryAfterMs: 1_000,
      };
    }
    if (rpm !== undefined) {
      const now = this.now();
      const times = (this.recent.get(key) ?? []).filter((t) => t > now - MINUTE);
      if (times.length >= rpm) {
        this.recent.set(key, times);
        return {
          ok: false,
          reason: `This key made ${rpm} requests in the last minute, its limit`,
          retryAfterMs: times[0]! + MINUTE - now,
        };
      }
      times.push(now);
      this.recent.set(key, times);
    }
    this.inFlight.set(key, flying + 1);
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        const left = (this.inFlight.get(key) ?? 1) - 1;
        if (left > 0) this.inFlight.set(key, left);
        else this.inFlight.delete(key);
      },
    };
  }

  /** Calls in flight for `key`. */
  flying(key: number): number {
    return this.inFlight.get(key) ?? 0;
  }
}

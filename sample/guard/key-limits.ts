/** Per-key limits the gateway holds itself: calls in flight; absent = none. */
export interface KeyLimitOptions {
  maxInFlight?: number;
}

/** What {@link KeyLimits.admit} answers: a release for the call, or why not and for how long. */
export type KeyAdmission =
  { ok: true; release: () => void } | { ok: false; reason: string; retryAfterMs: number };

/**
 * Calls in flight per key, in this process, so that one client cannot hold every connection
 * the gateway has. The switchboard's tenants have limits per minute, per day and per budget but
 * none on calls in flight, so this one stays here; the per-minute limits of a key are its tenant's
 * (see `key-tenants.ts`). Memory is bounded by the number of keys.
 *
 * @example
 * ```ts
 * const limits = new KeyLimits({ maxInFlight: 4 });
 * const a = limits.admit(0);
 * if (a.ok) a.release(); // once the response is written
 * ```
 */
export class KeyLimits {
  private readonly inFlight = new Map<number, number>();

  constructor(private readonly options: KeyLimitOptions = {}) {
    const { maxInFlight } = options;
    if (maxInFlight !== undefined && !(Number.isInteger(maxInFlight) && maxInFlight >= 1)) {
      throw new RangeError(`maxInFlight must be a positive integer, got ${String(maxInFlight)}`);
    }
  }

  /** Whether any limit is set. */
  get enabled(): boolean {
    return this.options.maxInFlight !== undefined;
  }

  /** Admits one call of key `key` (the key's index), or says why not and when to retry. */
  admit(key: number): KeyAdmission {
    const { maxInFlight } = this.options;
    const flying = this.inFlight.get(key) ?? 0;
    if (maxInFlight !== undefined && flying >= maxInFlight) {
      return {
        ok: false,
        reason: `This key has ${flying} calls in flight, its limit`,
        retryAfterMs: 1_000,
      };
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

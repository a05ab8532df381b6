/**
 * The counts of one tenant and how a call is let through them, the same in every store: a minute
 * of tokens and requests in one-second buckets (the window holds the 61 newest, so any 60 s span
 * an upstream counts over lies inside it), tokens of the UTC day, and USD of the budget's UTC day
 * or month. A call is taken whole or not at all; its answer adjusts the counts it was taken into.
 */
import { BUCKET_MS, MinuteBuckets } from './minute-buckets';

/** Which limit of a tenant's policy. */
export type TenantLimitName = 'tpm' | 'rpm' | 'tokensPerDay' | 'budget';

/** A tenant's limits in force (0 or absent: none). `period`: the budget's (`'day'`/`'month'`). */
export interface TenantLimits {
  tpm?: number;
  rpm?: number;
  tokensPerDay?: number;
  usd?: number;
  period?: 'day' | 'month';
}

/** What a call takes: tokens at admission, one request, USD reserved. */
export interface TenantCharge {
  tokens: number;
  requests: number;
  usd: number;
}

/** A call let through (`at`: when it was taken), or the limit in its way and how long until room. */
export type TenantVerdict =
  | { ok: true; at: number }
  | {
      ok: false;
      limit: TenantLimitName;
      waitMs: number;
      used: number;
      value: number;
      /** Why, when it is not the count (the store down): said instead of the figures. */
      reason?: string;
    };

/**
 * Where a tenant's counts live: this process ({@link LocalTenantCounts}) or a shared store, where
 * {@link take} is one atomic step so that two replicas cannot both take the last room.
 *
 * @example
 * ```ts
 * const v = await counts.take('acme', { tpm: 2000 }, { tokens: 500, requests: 1, usd: 0 }, now);
 * if (v.ok) counts.adjust('acme', { tokens: -120, requests: 0, usd: 0 }, v.at, { tpm: 2000 });
 * ```
 */
export interface TenantCounts {
  take(
    key: string,
    limits: TenantLimits,
    charge: TenantCharge,
    now: number,
  ): TenantVerdict | Promise<TenantVerdict>;
  /** Add `delta` (negative: give back) to the counts a call taken at `at` went into. */
  adjust(key: string, delta: TenantCharge, at: number, limits: TenantLimits): void;
}

const DAY_MS = 86_400_000;

/** The UTC day number of `t` (epoch ms). */
export function dayOf(t: number): number {
  return Math.floor(t / DAY_MS);
}

/**
 * The budget period `t` falls in, as a key (`d<day>` or `m<months since 1970>`), and when it starts
 * and ends (epoch ms).
 *
 * @example
 * ```ts
 * periodOf(Date.UTC(2025, 5, 30, 23), 'month'); // { key: 'm665', start: Date.UTC(2025, 5, 1), end: Date.UTC(2025, 6, 1) }
 * ```
 */
export function periodOf(
  t: number,
  per: 'day' | 'month',
): { key: string; start: number; end: number } {
  if (per === 'day') {
    const day = dayOf(t);
    return { key: `d${day}`, start: day * DAY_MS, end: (day + 1) * DAY_MS };
  }
  const date = new Date(t);
  const y = date.getUTCFullYear();
  const m = date.getUTCMonth();
  return { key: `m${(y - 1970) * 12 + m}`, start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) };
}

/** One tenant's counts in this process. */
interface Entry {
  tokens: MinuteBuckets;
  requests: MinuteBuckets;
  day: number;
  dayTokens: number;
  period: string;
  /** When {@link period} starts and ends (epoch ms): the key is made anew only outside them. */
  periodStart: number;
  periodEnd: number;
  usd: number;
  /** Newest time anything was taken (for forgetting idle tenants). */
  last: number;
}

/**
 * Tenants' counts in this process: exact for one replica, and what a shared store falls back to
 * while it cannot be reached. Tenants idle for longer than their longest period are forgotten.
 *
 * @example
 * ```ts
 * const counts = new LocalTenantCounts();
 * counts.take('acme', { tpm: 2000 }, { tokens: 500, requests: 1, usd: 0 }, Date.now()); // { ok: true, ... }
 * ```
 */
export class LocalTenantCounts implements TenantCounts {
  private readonly entries = new Map<string, Entry>();
  private takes = 0;

  take(key: string, limits: TenantLimits, charge: TenantCharge, now: number): TenantVerdict {
    if (++this.takes % 1024 === 0) this.forget(now);
    let e = this.entries.get(key);
    if (e === undefined) {
      e = {
        tokens: new MinuteBuckets(),
        requests: new MinuteBuckets(),
        day: 0,
        dayTokens: 0,
        period: '',
        periodStart: 0,
        periodEnd: 0,
        usd: 0,
        last: now,
      };
      this.entries.set(key, e);
    }
    const bucket = Math.floor(now / BUCKET_MS);
    const tokens = e.tokens.slide(bucket);
    const requests = e.requests.slide(bucket);
    const day = dayOf(now);
    if (e.day !== day) {
      e.day = day;
      e.dayTokens = 0;
    }
    const per = limits.period;
    if (per !== undefined && (now >= e.periodEnd || now < e.periodStart)) {
      const period = periodOf(now, per);
      if (e.period !== period.key) {
        e.period = period.key;
        e.usd = 0;
      }
      e.periodStart = period.start;
      e.periodEnd = period.end;
    }
    const tpm = limits.tpm ?? 0;
    if (tpm > 0 && tokens + charge.tokens > tpm) {
      const waitMs = e.tokens.waitToFree(tokens + charge.tokens - tpm, now);
      return { ok: false, limit: 'tpm', waitMs, used: tokens, value: tpm };
    }
    const rpm = limits.rpm ?? 0;
    if (rpm > 0 && requests + charge.requests > rpm) {
      const waitMs = e.requests.waitToFree(requests + charge.requests - rpm, now);
      return { ok: false, limit: 'rpm', waitMs, used: requests, value: rpm };
    }
    const tpd = limits.tokensPerDay ?? 0;
    if (tpd > 0 && e.dayTokens + charge.tokens > tpd) {
      const waitMs = Math.max(1, (day + 1) * DAY_MS - now);
      return { ok: false, limit: 'tokensPerDay', waitMs, used: e.dayTokens, value: tpd };
    }
    const usd = limits.usd ?? 0;
    if (per !== undefined && usd > 0 && e.usd + charge.usd > usd + 1e-12) {
      const waitMs = Math.max(1, e.periodEnd - now);
      return { ok: false, limit: 'budget', waitMs, used: e.usd, value: usd };
    }
    e.tokens.take(bucket, charge.tokens);
    e.requests.take(bucket, charge.requests);
    e.dayTokens += charge.tokens;
    e.usd += charge.usd;
    e.last = now;
    return { ok: true, at: now };
  }

  adjust(key: string, delta: TenantCharge, at: number, limits: TenantLimits): void {
    const e = this.entries.get(key);
    if (e === undefined) return;
    const bucket = Math.floor(at / BUCKET_MS);
    // Only into the counts the call was taken into: a window or period that has moved on keeps
    // what it counts now.
    e.tokens.add(bucket, delta.tokens);
    e.requests.add(bucket, delta.requests);
    if (e.day === dayOf(at)) e.dayTokens = Math.max(0, e.dayTokens + delta.tokens);
    if (limits.period !== undefined && at >= e.periodStart && at < e.periodEnd) {
      e.usd = Math.max(0, e.usd + delta.usd);
    }
  }

  /** What `key` has taken at `now`: the minute's tokens and requests, the day's tokens, the period's USD. */
  used(
    key: string,
    now: number,
  ): { tokens: number; requests: number; dayTokens: number; usd: number } {
    const e = this.entries.get(key);
    if (e === undefined) return { tokens: 0, requests: 0, dayTokens: 0, usd: 0 };
    const bucket = Math.floor(now / BUCKET_MS);
    return {
      tokens: e.tokens.slide(bucket),
      requests: e.requests.slide(bucket),
      dayTokens: e.day === dayOf(now) ? e.dayTokens : 0,
      usd: e.usd,
    };
  }

  private forget(now: number): void {
    // A month is the longest period anything is counted over.
    for (const [key, e] of this.entries) if (now - e.last > 32 * DAY_MS) this.entries.delete(key);
  }
}

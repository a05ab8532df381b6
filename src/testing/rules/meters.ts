/**
 * The two ways upstreams meter usage over time: a fixed window that forgets everything at its
 * end (Azure OpenAI's standard deployments), and a token bucket that refills continuously
 * (OpenAI, Anthropic) or drains continuously (Azure's provisioned utilization).
 */
import type { QuotaDemand } from './rule-set';

/**
 * A fixed window that starts with the first charge after the previous one expired.
 *
 * @example
 * ```ts
 * const minute = new FixedWindow(60_000);
 * minute.roll(now);
 * minute.used += 1_000;
 * ```
 */
export class FixedWindow {
  private start = -Infinity;
  used = 0;

  constructor(readonly lengthMs: number) {}

  roll(now: number): void {
    if (now >= this.start + this.lengthMs || now < this.start) {
      this.start = now;
      this.used = 0;
    }
  }

  /** Usage of the window open at `now` (0 when it has expired). */
  usedAt(now: number): number {
    return now >= this.start + this.lengthMs || now < this.start ? 0 : this.used;
  }

  /** Milliseconds until the current window ends (0 when none is open). */
  remainingMs(now: number): number {
    return Math.max(0, this.start + this.lengthMs - now);
  }

  reset(): void {
    this.start = -Infinity;
    this.used = 0;
  }
}

/**
 * Whether `demand` overruns a requests window or a tokens window at `now` (a limit of 0: none),
 * both rolled on first: the reason, the wait until the windows that refuse it end, and whether no
 * window ever takes it (its tokens exceed the limit itself); undefined when it fits.
 *
 * @example
 * ```ts
 * const over = overWindows({ requests, tokens }, { requests: 20, tokens: 10_000 }, demand, now);
 * if (over) return { ok: false, ...over, headers };
 * ```
 */
export function overWindows(
  windows: { readonly requests: FixedWindow; readonly tokens: FixedWindow },
  limits: { readonly requests: number; readonly tokens: number },
  demand: QuotaDemand,
  now: number,
): { reason: 'requests' | 'tokens'; retryMs: number; never: boolean } | undefined {
  const { requests, tokens } = windows;
  requests.roll(now);
  tokens.roll(now);
  const overRequests = limits.requests > 0 && requests.used + demand.requests > limits.requests;
  const overTokens = limits.tokens > 0 && tokens.used + demand.tokens > limits.tokens;
  if (!overRequests && !overTokens) return undefined;
  return {
    reason: overTokens ? 'tokens' : 'requests',
    retryMs: Math.max(
      overRequests ? requests.remainingMs(now) : 0,
      overTokens ? tokens.remainingMs(now) : 0,
    ),
    never: limits.tokens > 0 && demand.tokens > limits.tokens,
  };
}

/**
 * A token bucket of `capacity` that refills at `capacity` per `periodMs`, continuously: usage
 * frees up gradually instead of at a window boundary.
 *
 * @example
 * ```ts
 * const itpm = new TokenBucket(30_000, 60_000);
 * if (itpm.available(now) >= 1_200) itpm.take(1_200, now);
 * ```
 */
export class TokenBucket {
  private level: number;
  private at = -Infinity;

  constructor(
    readonly capacity: number,
    readonly periodMs: number,
  ) {
    this.level = capacity;
  }

  /** Units available at `now`. */
  available(now: number): number {
    this.refill(now);
    return this.level;
  }

  /** Takes `amount` (may go below zero when forced). */
  take(amount: number, now: number): void {
    this.refill(now);
    this.level -= amount;
  }

  /** Gives `amount` back, never above capacity. */
  give(amount: number, now: number): void {
    this.refill(now);
    this.level = Math.min(this.capacity, this.level + amount);
  }

  /** Milliseconds until `amount` is available (Infinity above capacity). */
  waitMs(amount: number, now: number): number {
    const missing = amount - this.available(now);
    if (missing <= 0) return 0;
    if (amount > this.capacity) return Infinity;
    return (missing / this.capacity) * this.periodMs;
  }

  /** Milliseconds until the bucket is full again. */
  fullInMs(now: number): number {
    return ((this.capacity - this.available(now)) / this.capacity) * this.periodMs;
  }

  reset(): void {
    this.level = this.capacity;
    this.at = -Infinity;
  }

  private refill(now: number): void {
    if (this.at === -Infinity || now < this.at) {
      this.at = now;
      return;
    }
    this.level = Math.min(
      this.capacity,
      this.level + ((now - this.at) / this.periodMs) * this.capacity,
    );
    this.at = now;
  }
}

/** One minute, the period every documented limit is stated in. */
export const MINUTE = 60_000;

/** Seconds as Azure's `reset` headers give them: up to millisecond precision, no trailing zeros. */
export const seconds = (ms: number): number => Math.round(Math.max(0, ms)) / 1000;

/**
 * The bucket of a per-minute request limit enforced over a shorter interval (`windowMs`, before
 * `timeScale`), as OpenAI and Anthropic say it may be: that interval's share of `rpm` (at least
 * one request), refilled at `rpm` a minute; `undefined` without an `rpm` or an interval.
 *
 * @example
 * ```ts
 * shortBucket(600, 1_000, 1)!.capacity; // 10: 600 RPM enforced as 10 requests a second
 * ```
 */
export function shortBucket(
  rpm: number,
  windowMs: number | undefined,
  timeScale: number,
): TokenBucket | undefined {
  if (!(rpm > 0) || windowMs === undefined || !(windowMs < MINUTE)) return undefined;
  const capacity = Math.max(1, Math.floor((rpm * windowMs) / MINUTE));
  // Refilled at rpm a minute: `capacity` every `capacity / rpm` of a minute.
  return new TokenBucket(capacity, ((capacity / rpm) * MINUTE) / timeScale);
}

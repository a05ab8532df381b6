import { CountWindow, type UsageWindowKind } from './count-window';
import type { DrainCount } from './drain-count';

export { CountWindow, type UsageWindowKind } from './count-window';

/** One column of a {@link UsageWindow}: its tokens or its requests. */
export type UsageColumn = 'tokens' | 'requests';

/** One bucket of a sliding window: usage charged in `[start, start + bucketMs)`. */
export interface UsageBucket {
  /** Epoch ms, a multiple of the window's `bucketMs`. */
  start: number;
  tokens: number;
  requests: number;
}

/**
 * Tokens and requests counted over a window, as a shared state store publishes them (one bucket
 * holds both): a view over two {@link CountWindow}s, the tokens counter's and the requests
 * counter's, configured alike. In the `sliding` kind the newest sixth of the requests is counted
 * apart ({@link recentRequests}), as Azure enforces RPM per 10 s; the `fixed` kind is only
 * forgotten by {@link reset} (the owner runs the timer).
 *
 * @example
 * ```ts
 * const w = new UsageWindow(Date.now);
 * w.configure('sliding', 60_000); // the minute that ends now, in 120 buckets of 500 ms
 * w.add(250, 1);
 * w.tokens; // 250
 * ```
 */
export class UsageWindow<C extends CountWindow | DrainCount = CountWindow> {
  constructor(
    private readonly clock: () => number = Date.now,
    /**
     * The tokens' window (a tokens counter's own), or the tokens' bucket where the upstream's
     * refills continuously: then the view is of the fixed kind, its one bucket what the bucket
     * holds now.
     */
    readonly tokenCount: C = new CountWindow(clock) as C,
    /** The requests' window, with its newest sixth (a requests counter's own), or their bucket. */
    readonly requestCount: C = new CountWindow(clock, true) as C,
  ) {}

  /** The kind in use. */
  get windowKind(): UsageWindowKind {
    return this.tokenCount instanceof CountWindow ? this.tokenCount.windowKind : 'fixed';
  }

  /** Bucket length in ms; 0 in the fixed kind. */
  get bucketMs(): number {
    return this.tokenCount instanceof CountWindow ? this.tokenCount.bucketMs : 0;
  }

  /** Length in ms of the window a sliding kind covers (0 in the fixed kind). */
  get windowMs(): number {
    return this.tokenCount instanceof CountWindow ? this.tokenCount.windowMs : 0;
  }

  /**
   * Switch kinds. `sliding` needs `windowMs > 0` and keeps `buckets` buckets (rounded to a multiple
   * of 6, at least 6); anything else is `fixed`. Usage counted so far stays, in the newest bucket.
   */
  configure(kind: UsageWindowKind, windowMs = 0, buckets = 120): void {
    this.tokenCount.configure(kind, windowMs, buckets);
    this.requestCount.configure(kind, windowMs, buckets);
  }

  /** Tokens in the window. */
  get tokens(): number {
    return this.tokenCount.at(this.clock());
  }

  /** Requests in the window. */
  get requests(): number {
    return this.requestCount.at(this.clock());
  }

  /** Sliding kind: requests of the newest sixth of the window; fixed kind: 0. */
  get recentRequests(): number {
    return this.recentRequestsAt(this.clock());
  }

  /** {@link tokens} at `now` (epoch ms, the caller's one reading of the clock). */
  tokensAt(now: number): number {
    return this.tokenCount.at(now);
  }

  /** {@link requests} at `now`. */
  requestsAt(now: number): number {
    return this.requestCount.at(now);
  }

  /** {@link recentRequests} at `now`. */
  recentRequestsAt(now: number): number {
    const count = this.requestCount;
    return count instanceof CountWindow ? count.recentAt(now) : 0;
  }

  /** One column's window. */
  column(column: UsageColumn): C {
    return column === 'tokens' ? this.tokenCount : this.requestCount;
  }

  /** One column at `now` ({@link tokensAt} or {@link requestsAt}). */
  countAt(column: UsageColumn, now: number): number {
    return this.column(column).at(now);
  }

  /** One column of {@link usageBefore}, without building an object. */
  countBefore(column: UsageColumn, t: number, now: number): number {
    return this.column(column).before(t, now);
  }

  /** Forget the oldest `amount` of one column ({@link trimOldest} for one of them). */
  trimColumn(column: UsageColumn, amount: number, now: number): void {
    this.column(column).trimOldest(amount, now);
  }

  /** Forget everything. */
  reset(): void {
    this.tokenCount.reset();
    this.requestCount.reset();
  }

  /**
   * Charge (positive) or refund (negative) usage. A charge goes to the current bucket; a refund
   * comes off the newest buckets first (it undoes a recent charge) and never takes a bucket or the
   * window below zero. `now` is the caller's reading of the clock, read here when not given.
   */
  add(tokens: number, requests = 0, now?: number): void {
    const at = now ?? this.clock();
    if (tokens !== 0) this.tokenCount.add(tokens, at);
    if (requests !== 0) this.requestCount.add(requests, at);
  }

  /**
   * Forget the oldest `tokens` tokens and `requests` requests (at most what the window holds):
   * usage the upstream no longer counts, because its own window has moved on since we charged
   * it. The fixed kind takes them off its totals. `now`: the caller's reading of the clock.
   *
   * @example
   * ```ts
   * window.trimOldest(1_200, 0); // the upstream's header counts 1 200 tokens fewer than we do
   * ```
   */
  trimOldest(tokens: number, requests = 0, now?: number): void {
    const at = now ?? this.clock();
    this.tokenCount.trimOldest(tokens, at);
    this.requestCount.trimOldest(requests, at);
  }

  /**
   * Usage charged before epoch ms `t` that is still in the window at `now` (sliding kind; the
   * fixed kind answers its totals). A bucket that `t` falls inside counts as after it.
   *
   * @example
   * ```ts
   * const { tokens } = window.usageBefore(windowEnd, Date.now()); // what the upstream forgot
   * ```
   */
  usageBefore(t: number, now?: number): { tokens: number; requests: number } {
    const at = now ?? this.clock();
    return { tokens: this.tokenCount.before(t, at), requests: this.requestCount.before(t, at) };
  }

  /**
   * This instance's usage per bucket, oldest first, empty buckets left out. The fixed kind has one
   * bucket that starts at 0.
   *
   * @example
   * ```ts
   * for (const b of window.ownBuckets()) publish(b.start, b.tokens, b.requests);
   * ```
   */
  *ownBuckets(): Iterable<UsageBucket> {
    const now = this.clock();
    const tokens = this.tokenCount;
    const requests = this.requestCount;
    if (
      !(tokens instanceof CountWindow && requests instanceof CountWindow) ||
      tokens.bucketMs === 0
    ) {
      const t = tokens.at(now);
      const r = requests.at(now);
      if (t !== 0 || r !== 0) yield { start: 0, tokens: t, requests: r };
      return;
    }
    tokens.catchUp(now);
    requests.catchUp(now);
    const head = tokens.headNumber;
    const bucketMs = tokens.bucketMs;
    for (let k = tokens.size - 1; k >= 0; k--) {
      const t = tokens.behind(k);
      const r = requests.behind(k);
      if (t === 0 && r === 0) continue;
      yield { start: (head - k) * bucketMs, tokens: t, requests: r };
    }
  }

  /**
   * ms from now until the window holds at most `tokens` tokens, `requests` requests and
   * `recent` requests in its newest sixth (`Infinity` to ignore one), as usage slides out; 0 when
   * it already does. `Infinity` when sliding out cannot get there (the fixed kind, or a target
   * below zero). `now` is the caller's reading of the clock, read here when not given.
   */
  timeUntil(tokens: number, requests: number, recent = Infinity, now?: number): number {
    if (tokens < 0 || requests < 0 || recent < 0) return Infinity;
    const at = now ?? this.clock();
    // Each count only falls as time passes: both hold from the later of their times on.
    const t = tokens === Infinity ? 0 : this.tokenCount.timeUntil(tokens, Infinity, at);
    if (t === Infinity) return t;
    const r =
      requests === Infinity && recent === Infinity
        ? 0
        : this.requestCount.timeUntil(requests, recent, at);
    return t > r ? t : r;
  }
}

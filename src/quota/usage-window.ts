/** How a {@link UsageWindow} forgets usage. */
export type UsageWindowKind = 'sliding' | 'fixed';

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
 * Tokens and requests counted over a window, in one of two kinds:
 *
 * - `sliding`: usage is kept in epoch-aligned buckets of `bucketMs` (every bucket starts at a
 *   multiple of `bucketMs`, so instances that share their buckets agree on their bounds) and
 *   forgotten a bucket at a time once older than the window. The window covers at least the last
 *   `windowMs` (at most a bucket more): never less than what an upstream counts in any fixed
 *   window of that length that ends now. The newest sixth of the window is also counted apart
 *   ({@link recentRequests}), as Azure enforces RPM per 10 s.
 * - `fixed`: usage is only forgotten by {@link reset} (the owner runs the timer).
 *
 * @example
 * ```ts
 * const w = new UsageWindow(Date.now);
 * w.configure('sliding', 60_000); // the minute that ends now, in 120 buckets of 500 ms
 * w.add(250, 1);
 * w.tokens; // 250
 * ```
 */
export class UsageWindow {
  private kind: UsageWindowKind = 'fixed';
  private total = 0;
  private count = 0;
  /** Sliding: bucket length in ms (0 in the fixed kind). */
  private bucketLength = 0;
  private bucketTokens: Float64Array | undefined;
  private bucketRequests: Float64Array | undefined;
  /** Ring index of the bucket being filled, and its number since the epoch (start / bucketMs). */
  private head = 0;
  private headIndex = 0;
  /** Epoch ms span of the head bucket: a reading inside it needs no sliding (no division). */
  private headStart = 0;
  private headEnd = 0;
  /** Requests in the newest `shortBuckets` buckets (the last sixth of the window plus the head). */
  private shortRequests = 0;
  private shortBuckets = 0;

  constructor(private readonly clock: () => number = Date.now) {}

  /** The kind in use. */
  get windowKind(): UsageWindowKind {
    return this.kind;
  }

  /** Bucket length in ms; 0 in the fixed kind. */
  get bucketMs(): number {
    return this.bucketLength;
  }

  /** Length in ms of the window a sliding kind covers (0 in the fixed kind). */
  get windowMs(): number {
    return this.bucketTokens ? this.bucketLength * (this.bucketTokens.length - 1) : 0;
  }

  /**
   * Switch kinds. `sliding` needs `windowMs > 0` and keeps `buckets` buckets (rounded to a multiple
   * of 6, at least 6); anything else is `fixed`. Usage counted so far stays, in the newest bucket.
   */
  configure(kind: UsageWindowKind, windowMs = 0, buckets = 120): void {
    this.shortBuckets = 0;
    this.shortRequests = 0;
    if (kind === 'fixed' || !(windowMs > 0)) {
      this.kind = 'fixed';
      this.bucketLength = 0;
      this.bucketTokens = this.bucketRequests = undefined;
      return;
    }
    this.kind = 'sliding';
    buckets = Math.max(6, Math.round(buckets / 6) * 6);
    this.bucketLength = windowMs / buckets;
    this.bucketTokens = new Float64Array(buckets + 1);
    this.bucketRequests = new Float64Array(buckets + 1);
    this.bucketTokens[0] = this.total;
    this.bucketRequests[0] = this.count;
    this.head = 0;
    this.setHead(Math.floor(this.clock() / this.bucketLength));
    this.shortBuckets = buckets / 6 + 1;
    this.shortRequests = this.count;
  }

  /** Tokens in the window. */
  get tokens(): number {
    if (this.bucketLength !== 0) this.slide(this.clock());
    return this.total;
  }

  /** Requests in the window. */
  get requests(): number {
    if (this.bucketLength !== 0) this.slide(this.clock());
    return this.count;
  }

  /** Sliding kind: requests of the newest sixth of the window; fixed kind: 0. */
  get recentRequests(): number {
    if (this.bucketLength === 0) return 0;
    this.slide(this.clock());
    return this.shortRequests;
  }

  /**
   * {@link tokens} at `now` (epoch ms, the caller's one reading of the clock): an operation that
   * reads several counts reads the clock once, not once per count.
   *
   * @example
   * ```ts
   * const now = clock();
   * const fits = w.tokensAt(now) + 500 <= tpm && w.requestsAt(now) + 1 <= rpm;
   * ```
   */
  tokensAt(now: number): number {
    if (this.bucketLength !== 0) this.slide(now);
    return this.total;
  }

  /** {@link requests} at `now` (see {@link tokensAt}). */
  requestsAt(now: number): number {
    if (this.bucketLength !== 0) this.slide(now);
    return this.count;
  }

  /** {@link recentRequests} at `now` (see {@link tokensAt}). */
  recentRequestsAt(now: number): number {
    if (this.bucketLength === 0) return 0;
    this.slide(now);
    return this.shortRequests;
  }

  /** One column at `now` ({@link tokensAt} or {@link requestsAt}). */
  countAt(column: UsageColumn, now: number): number {
    if (this.bucketLength !== 0) this.slide(now);
    return column === 'tokens' ? this.total : this.count;
  }

  /** One column of {@link usageBefore}, without building an object. */
  countBefore(column: UsageColumn, t: number, now: number): number {
    if (this.bucketLength === 0) return column === 'tokens' ? this.total : this.count;
    this.slide(now);
    const b = column === 'tokens' ? this.bucketTokens! : this.bucketRequests!;
    const n = b.length;
    // The bucket k places behind the head is number headIndex - k: count those below t's.
    const older = this.headIndex - Math.floor(t / this.bucketLength);
    let sum = 0;
    for (let k = Math.max(0, older + 1); k < n; k++) sum += b[(this.head - k + n) % n]!;
    return sum;
  }

  /** Forget the oldest `amount` of one column ({@link trimOldest} for one of them). */
  trimColumn(column: UsageColumn, amount: number, now: number): void {
    if (column === 'tokens') this.trimOldest(amount, 0, now);
    else this.trimOldest(0, amount, now);
  }

  /** Forget everything. */
  reset(): void {
    this.total = 0;
    this.count = 0;
    this.shortRequests = 0;
    this.bucketTokens?.fill(0);
    this.bucketRequests?.fill(0);
  }

  /**
   * Charge (positive) or refund (negative) usage. A charge goes to the current bucket; a refund
   * comes off the newest buckets first (it undoes a recent charge) and never takes a bucket or the
   * window below zero, so a refund that arrives after usage left the window does not eat into
   * what is counted now. `now` is the caller's reading of the clock, read here when not given.
   */
  add(tokens: number, requests = 0, now?: number): void {
    if (this.bucketLength === 0) {
      const t = this.total + tokens;
      this.total = t > 0 ? t : 0;
      if (requests !== 0) {
        const r = this.count + requests;
        this.count = r > 0 ? r : 0;
      }
      return;
    }
    this.slide(now ?? this.clock());
    if (tokens !== 0) this.total = this.take(this.bucketTokens!, tokens, this.total, false);
    if (requests !== 0) this.count = this.take(this.bucketRequests!, requests, this.count, true);
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
    if (this.bucketLength === 0) {
      if (tokens > 0) this.total = Math.max(0, this.total - tokens);
      if (requests > 0) this.count = Math.max(0, this.count - requests);
      return;
    }
    this.slide(now ?? this.clock());
    if (tokens > 0) this.total = this.trim(this.bucketTokens!, tokens, this.total, false);
    if (requests > 0) this.count = this.trim(this.bucketRequests!, requests, this.count, true);
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
    return {
      tokens: this.countBefore('tokens', t, at),
      requests: this.countBefore('requests', t, at),
    };
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
    if (this.bucketLength === 0) {
      if (this.total !== 0 || this.count !== 0) {
        yield { start: 0, tokens: this.total, requests: this.count };
      }
      return;
    }
    this.slide(this.clock());
    const tokens = this.bucketTokens!;
    const requests = this.bucketRequests!;
    const n = tokens.length;
    for (let k = n - 1; k >= 0; k--) {
      const i = (this.head - k + n) % n;
      if (tokens[i] === 0 && requests[i] === 0) continue;
      yield {
        start: (this.headIndex - k) * this.bucketLength,
        tokens: tokens[i]!,
        requests: requests[i]!,
      };
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
    if (now === undefined) now = this.clock();
    let t = this.tokensAt(now);
    let r = this.count;
    let s = this.shortRequests;
    if (t <= tokens && r <= requests && s <= recent) return 0;
    if (this.bucketLength === 0) return Infinity;
    const bt = this.bucketTokens!;
    const br = this.bucketRequests!;
    const n = bt.length;
    const short = this.shortBuckets;
    // The k-th oldest bucket leaves the window when bucket headIndex + k opens; at the same step the
    // bucket `short` places behind the new head leaves the newest sixth.
    for (let k = 1; k < n; k++) {
      const next = (this.head + k) % n;
      t -= bt[next]!;
      r -= br[next]!;
      const out = (next - short + n) % n;
      if (k <= short) s -= br[out]!;
      else s = 0;
      if (t <= tokens + 1e-9 && r <= requests + 1e-9 && s <= recent + 1e-9) {
        return Math.max(0, (this.headIndex + k) * this.bucketLength - now);
      }
    }
    return Math.max(0, (this.headIndex + n) * this.bucketLength - now);
  }

  private setHead(index: number): void {
    this.headIndex = index;
    this.headStart = index * this.bucketLength;
    this.headEnd = this.headStart + this.bucketLength;
  }

  /** Forget the buckets that left the window by `now`. */
  private slide(now: number): void {
    // Most readings fall in the head bucket: nothing to do, and no division to find out.
    if (now < this.headEnd && now >= this.headStart) return;
    const index = Math.floor(now / this.bucketLength);
    const steps = index - this.headIndex;
    if (steps <= 0) {
      // The clock went back: the current bucket goes on where the clock now is.
      if (steps < 0) this.setHead(index);
      return;
    }
    const tokens = this.bucketTokens!;
    const requests = this.bucketRequests!;
    const n = tokens.length;
    if (steps >= n) {
      tokens.fill(0);
      requests.fill(0);
      this.total = 0;
      this.count = 0;
      this.shortRequests = 0;
    } else {
      const short = this.shortBuckets;
      for (let k = 0; k < steps; k++) {
        this.head = this.head + 1 === n ? 0 : this.head + 1;
        this.total -= tokens[this.head]!;
        this.count -= requests[this.head]!;
        tokens[this.head] = 0;
        requests[this.head] = 0;
        // The bucket that now falls out of the newest sixth.
        const out = this.head - short;
        this.shortRequests -= requests[out < 0 ? out + n : out]!;
      }
      if (this.total < 1e-9) this.total = 0;
      if (this.count < 1e-9) this.count = 0;
      if (this.shortRequests < 1e-9) this.shortRequests = 0;
    }
    this.setHead(index);
  }

  /** Takes `amount` off the oldest buckets first; returns the new total. */
  private trim(buckets: Float64Array, amount: number, total: number, isRequests: boolean): number {
    let left = amount;
    const n = buckets.length;
    for (let k = n - 1; k >= 0 && left > 0; k--) {
      const i = (this.head - k + n) % n;
      const b = buckets[i]!;
      if (b === 0) continue;
      const used = b < left ? b : left;
      buckets[i] = b - used;
      left -= used;
      if (isRequests && k < this.shortBuckets) this.shortRequests -= used;
    }
    if (this.shortRequests < 1e-9) this.shortRequests = 0;
    const t = total - (amount - left);
    return t > 1e-9 ? t : 0;
  }

  private take(buckets: Float64Array, amount: number, total: number, isRequests: boolean): number {
    if (amount >= 0) {
      buckets[this.head]! += amount;
      if (isRequests) this.shortRequests += amount;
      return total + amount;
    }
    let left = -amount;
    const n = buckets.length;
    for (let k = 0, i = this.head; k < n && left > 0; k++, i = i === 0 ? n - 1 : i - 1) {
      const b = buckets[i]!;
      const used = b < left ? b : left;
      buckets[i] = b - used;
      left -= used;
      if (isRequests && k < this.shortBuckets) this.shortRequests -= used;
    }
    if (this.shortRequests < 0) this.shortRequests = 0;
    const t = total + amount + left;
    return t > 0 ? t : 0;
  }
}

/** How a usage window forgets usage. */
type WindowKind = 'sliding' | 'fixed';

/**
 * One count (tokens, requests, input or output tokens) over a window, as one limit's counter
 * owns it, in one of two kinds:
 *
 * - `sliding`: the count is kept in epoch-aligned buckets of `bucketMs` (every bucket starts at a
 *   multiple of `bucketMs`, so instances that share their buckets agree on their bounds) and
 *   forgotten a bucket at a time once older than the window. The window covers at least the last
 *   `windowMs` (at most a bucket more): never less than what an upstream counts in any fixed
 *   window of that length that ends now. With `recent`, the newest sixth of the window is also
 *   counted apart ({@link recentAt}), as Azure enforces RPM per 10 s within its minute.
 * - `fixed`: the count is only forgotten by {@link reset} (the owner runs the timer).
 *
 * Once the window has moved a whole window past its last charge it is empty: a reading then
 * costs the same whether the model was idle for a minute or a day.
 *
 * @example
 * ```ts
 * const tokens = new WindowCount(Date.now);
 * tokens.configure('sliding', 60_000); // the minute that ends now, in 120 buckets of 500 ms
 * tokens.add(250);
 * tokens.at(Date.now()); // 250
 * ```
 */
export class WindowCount {
  private kind: WindowKind = 'fixed';
  private total = 0;
  /** Sliding: bucket length in ms (0 in the fixed kind). */
  private bucketLength = 0;
  private buckets: Float64Array | undefined;
  /** Ring index of the bucket being filled, and its number since the epoch (start / bucketMs). */
  private head = 0;
  private headIndex = 0;
  /** Epoch ms span of the head bucket: a reading inside it needs no sliding (no division). */
  private headStart = 0;
  private headEnd = 0;
  /**
   * Number of the newest bucket charged, `-Infinity` when no bucket holds anything: once the
   * head is a window past it, every bucket is empty and nothing is left to walk.
   */
  private lastIndex = -Infinity;
  /** The count of the newest `recentBuckets` buckets (the last sixth of the window plus the head). */
  private recent = 0;
  private recentBuckets = 0;
  /** How many short windows make the window: 6 (Azure's 10 s in a minute) or 60 (its 1 s). */
  private shortWindows = 6;

  constructor(
    private readonly clock: () => number = Date.now,
    /** Whether the newest sixth of a sliding window is counted apart. */
    private readonly tracksRecent = false,
  ) {}

  /** The kind in use. */
  get windowKind(): WindowKind {
    return this.kind;
  }

  /** Bucket length in ms; 0 in the fixed kind. */
  get bucketMs(): number {
    return this.bucketLength;
  }

  /** Length in ms of the window a sliding kind covers (0 in the fixed kind). */
  get windowMs(): number {
    return this.buckets ? this.bucketLength * (this.buckets.length - 1) : 0;
  }

  /** Number of the head bucket (start / bucketMs); 0 in the fixed kind. */
  get headNumber(): number {
    return this.headIndex;
  }

  /**
   * Switch kinds. `sliding` needs `windowMs > 0` and keeps `buckets` buckets (rounded to a multiple
   * of 6, at least 6); anything else is `fixed`. The count so far stays, in the newest bucket.
   */
  configure(kind: WindowKind, windowMs = 0, buckets = 120): void {
    this.recentBuckets = 0;
    this.recent = 0;
    if (kind === 'fixed' || !(windowMs > 0)) {
      this.kind = 'fixed';
      this.bucketLength = 0;
      this.buckets = undefined;
      this.lastIndex = -Infinity;
      return;
    }
    this.kind = 'sliding';
    buckets = Math.max(6, Math.round(buckets / 6) * 6);
    this.bucketLength = windowMs / buckets;
    this.buckets = new Float64Array(buckets + 1);
    this.buckets[0] = this.total;
    this.head = 0;
    this.setHead(Math.floor(this.clock() / this.bucketLength));
    this.lastIndex = this.total !== 0 ? this.headIndex : -Infinity;
    if (this.tracksRecent) {
      this.recentBuckets = Math.max(1, Math.floor(buckets / this.shortWindows)) + 1;
      this.recent = this.total;
    }
  }

  /**
   * Count the newest `1 / windows` of a sliding window apart (6: Azure's 10 s requests window in
   * a minute; 60: its 1 s one), from the buckets already kept.
   */
  divideRecent(windows: number): void {
    this.shortWindows = windows;
    const b = this.buckets;
    if (!this.tracksRecent || b === undefined) return;
    this.slide(this.clock());
    const n = b.length;
    this.recentBuckets = Math.max(1, Math.floor((n - 1) / windows)) + 1;
    let sum = 0;
    for (let k = 0; k < this.recentBuckets; k++) sum += b[(this.head - k + n) % n]!;
    this.recent = sum;
  }

  /** The count in the window at `now` (epoch ms, the caller's one reading of the clock). */
  at(now: number): number {
    if (this.bucketLength !== 0) this.slide(now);
    return this.total;
  }

  /** The count of the newest sixth of a sliding window at `now` (with `recent`; else 0). */
  recentAt(now: number): number {
    if (this.recentBuckets === 0) return 0;
    this.slide(now);
    return this.recent;
  }

  /**
   * What was charged before epoch ms `t` that is still in the window at `now` (sliding kind; the
   * fixed kind answers its count). A bucket that `t` falls inside counts as after it.
   */
  before(t: number, now: number): number {
    if (this.bucketLength === 0) return this.total;
    this.slide(now);
    const b = this.buckets!;
    const n = b.length;
    // The bucket k places behind the head is number headIndex - k: count those below t's.
    const older = this.headIndex - Math.floor(t / this.bucketLength);
    let sum = 0;
    for (let k = Math.max(0, older + 1); k < n; k++) sum += b[(this.head - k + n) % n]!;
    return sum;
  }

  /** The bucket `k` places behind the head (after sliding to a reading of the clock). */
  behind(k: number): number {
    const b = this.buckets!;
    const n = b.length;
    return b[(this.head - k + n) % n]!;
  }

  /** Number of buckets (the window's and the head's); 0 in the fixed kind. */
  get size(): number {
    return this.buckets?.length ?? 0;
  }

  /**
   * The first time after a reading at `now` when the count can change by time alone: `Infinity`
   * when nothing slides out (the fixed kind, or an empty window), else the head bucket's end.
   */
  changesAt(now: number): number {
    if (this.bucketLength === 0) return Infinity;
    this.slide(now);
    return this.lastIndex === -Infinity ? Infinity : this.headEnd;
  }

  /** Slide to `now` (epoch ms): forget the buckets that left the window. */
  catchUp(now: number): void {
    if (this.bucketLength !== 0) this.slide(now);
  }

  /** Forget everything. */
  reset(): void {
    this.total = 0;
    this.recent = 0;
    this.buckets?.fill(0);
    this.lastIndex = -Infinity;
  }

  /**
   * Charge (positive) or refund (negative). A charge goes to the current bucket; a refund comes
   * off the newest buckets first (it undoes a recent charge) and never takes a bucket or the
   * window below zero, so a refund that arrives after usage left the window does not eat into
   * what is counted now. `now` is the caller's reading of the clock, read here when not given.
   */
  add(amount: number, now?: number): void {
    if (this.bucketLength === 0) {
      const t = this.total + amount;
      this.total = t > 0 ? t : 0;
      return;
    }
    this.slide(now ?? this.clock());
    if (amount > 0) {
      this.buckets![this.head]! += amount;
      if (this.recentBuckets !== 0) this.recent += amount;
      this.total += amount;
      if (this.headIndex > this.lastIndex) this.lastIndex = this.headIndex;
    } else if (amount < 0) {
      this.refund(-amount);
    }
  }

  /**
   * Forget the oldest `amount` (at most what the window holds): usage the upstream no longer
   * counts, because its own window has moved on since we charged it. The fixed kind takes it off
   * its count. `now`: the caller's reading of the clock.
   */
  trimOldest(amount: number, now?: number): void {
    if (!(amount > 0)) return;
    if (this.bucketLength === 0) {
      this.total = Math.max(0, this.total - amount);
      return;
    }
    this.slide(now ?? this.clock());
    let left = amount;
    const b = this.buckets!;
    const n = b.length;
    for (let k = n - 1; k >= 0 && left > 0; k--) {
      const i = (this.head - k + n) % n;
      const v = b[i]!;
      if (v === 0) continue;
      const used = v < left ? v : left;
      b[i] = v - used;
      left -= used;
      if (k < this.recentBuckets) this.recent -= used;
    }
    if (this.recent < 1e-9) this.recent = 0;
    const t = this.total - (amount - left);
    this.total = t > 1e-9 ? t : 0;
  }

  /**
   * ms from `now` until the window holds at most `target` and its newest sixth at most
   * `recentTarget` (`Infinity` to ignore one), as usage slides out; 0 when it already does.
   * `Infinity` when sliding out cannot get there (the fixed kind, or a target below zero).
   */
  timeUntil(target: number, recentTarget = Infinity, now?: number): number {
    if (target < 0 || recentTarget < 0) return Infinity;
    if (now === undefined) now = this.clock();
    let t = this.at(now);
    let s = this.recentBuckets !== 0 ? this.recent : 0;
    if (t <= target && s <= recentTarget) return 0;
    if (this.bucketLength === 0) return Infinity;
    const b = this.buckets!;
    const n = b.length;
    const short = this.recentBuckets;
    // The k-th oldest bucket leaves the window when bucket headIndex + k opens; at the same step the
    // bucket `short` places behind the new head leaves the newest sixth.
    for (let k = 1; k < n; k++) {
      const next = (this.head + k) % n;
      t -= b[next]!;
      if (k <= short) s -= b[(next - short + n) % n]!;
      else s = 0;
      if (t <= target + 1e-9 && s <= recentTarget + 1e-9) {
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
    const b = this.buckets!;
    const n = b.length;
    if (steps >= n || index - this.lastIndex >= n) {
      // Every bucket charged has left the window: an idle window costs one check.
      if (this.lastIndex !== -Infinity) {
        b.fill(0);
        this.total = 0;
        this.recent = 0;
        this.lastIndex = -Infinity;
      }
    } else {
      const short = this.recentBuckets;
      let head = this.head;
      for (let k = 0; k < steps; k++) {
        head = head + 1 === n ? 0 : head + 1;
        this.total -= b[head]!;
        b[head] = 0;
        // The bucket that now falls out of the newest sixth.
        if (short !== 0) {
          const out = head - short;
          this.recent -= b[out < 0 ? out + n : out]!;
        }
      }
      this.head = head;
      if (this.total < 1e-9) this.total = 0;
      if (this.recent < 1e-9) this.recent = 0;
    }
    this.setHead(index);
  }

  /** Takes `amount` off the newest buckets first. */
  private refund(amount: number): void {
    let left = amount;
    const b = this.buckets!;
    const n = b.length;
    for (let k = 0, i = this.head; k < n && left > 0; k++, i = i === 0 ? n - 1 : i - 1) {
      const v = b[i]!;
      const used = v < left ? v : left;
      b[i] = v - used;
      left -= used;
      if (k < this.recentBuckets) this.recent -= used;
    }
    if (this.recent < 0) this.recent = 0;
    const t = this.total - amount + left;
    this.total = t > 0 ? t : 0;
  }
}

/** One bucket of a sliding window: usage charged in `[start, start + bucketMs)`. */
export interface UsageBucket {
  /** Epoch ms, a multiple of the window's `bucketMs`. */
  start: number;
  tokens: number;
  requests: number;
}

/**
 * The tokens and requests of two counts zipped per bucket, oldest first, empty buckets left out,
 * as a shared state store publishes them (one bucket holds both). Two sliding windows configured
 * alike give their epoch-aligned buckets; anything else (a fixed window, a bucket that drains) is
 * one bucket that starts at 0 and holds the counts at `now`.
 *
 * @example
 * ```ts
 * for (const b of usageBuckets(tokens, requests, Date.now())) publish(b.start, b.tokens, b.requests);
 * ```
 */
export function usageBuckets(
  tokens: Pick<WindowCount, 'at'>,
  requests: Pick<WindowCount, 'at'>,
  now: number,
): UsageBucket[] {
  if (
    !(tokens instanceof WindowCount && requests instanceof WindowCount) ||
    tokens.bucketMs === 0
  ) {
    const t = tokens.at(now);
    const r = requests.at(now);
    return t !== 0 || r !== 0 ? [{ start: 0, tokens: t, requests: r }] : [];
  }
  tokens.catchUp(now);
  requests.catchUp(now);
  const head = tokens.headNumber;
  const bucketMs = tokens.bucketMs;
  const buckets: UsageBucket[] = [];
  for (let k = tokens.size - 1; k >= 0; k--) {
    const t = tokens.behind(k);
    const r = requests.behind(k);
    if (t === 0 && r === 0) continue;
    buckets.push({ start: (head - k) * bucketMs, tokens: t, requests: r });
  }
  return buckets;
}

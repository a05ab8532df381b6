/**
 * Virtual time for a replay: while installed, `setTimeout`, `setInterval`, `setImmediate` (and
 * their `clear*`) and `Date.now` of this process follow a clock that jumps from one event to the
 * next, so a day of traffic replays in seconds through code written for real timers (the
 * switchboard's queue, its deadlines). Between two instants every promise reaction runs, as it
 * would between two real timer callbacks; an immediate runs after them, at the same instant.
 */

/** A timer, with the methods Node's `Timeout` has (`unref()` and the like change nothing here). */
class Timer {
  cancelled = false;

  constructor(
    public at: number,
    public seq: number,
    readonly fn: (...args: unknown[]) => void,
    readonly args: unknown[],
    /** ms between runs, for an interval; 0 for a timeout. */
    readonly every: number,
  ) {}

  ref(): this {
    return this;
  }

  unref(): this {
    return this;
  }

  hasRef(): boolean {
    return false;
  }

  refresh(): this {
    return this;
  }

  [Symbol.toPrimitive](): number {
    return this.seq;
  }
}

/**
 * A clock and its timers, installed over the process's own for the length of {@link run}.
 *
 * @example
 * ```ts
 * const time = new VirtualTime(trace.start);
 * await time.run(() => nextArrival(), () => arriveOne());
 * ```
 */
export class VirtualTime {
  /** The virtual time (epoch ms). */
  now: number;
  private readonly heap: Timer[] = [];
  private immediates: Timer[] = [];
  private seq = 0;

  constructor(start: number) {
    this.now = start;
  }

  /** The clock, for options that take one. */
  readonly clock = (): number => this.now;

  /** Runs `fn` `ms` from now (at least 1 ms), as `setTimeout` does while {@link run} runs. */
  after(ms: number, fn: () => void): void {
    this.timer(fn, ms, 0, []);
  }

  /**
   * Runs until nothing is left to do: `next()` says when the next outside event (an arrival) is
   * due (Infinity: none), `fire()` makes it happen at that time. Timers fire in time order, events
   * due at one instant before the clock moves on.
   */
  async run(next: () => number, fire: () => void): Promise<void> {
    const saved = this.install();
    try {
      for (;;) {
        await turn(saved.setImmediate);
        if (this.immediates.length > 0) {
          const due = this.immediates;
          this.immediates = [];
          for (const t of due) if (!t.cancelled) t.fn(...t.args);
          continue;
        }
        const timerAt = this.peek();
        const arrivalAt = next();
        const at = Math.min(timerAt, arrivalAt);
        if (at === Infinity) break;
        if (at > this.now) this.now = at;
        while (next() <= this.now) fire();
        while (this.peek() <= this.now) {
          const t = this.pop();
          if (t.every > 0) {
            t.at = this.now + t.every;
            t.seq = this.seq++;
            this.push(t);
          }
          t.fn(...t.args);
        }
      }
    } finally {
      saved.restore();
    }
  }

  private install(): { setImmediate: typeof setImmediate; restore(): void } {
    const g = globalThis as unknown as Record<string, unknown>;
    const names = [
      'setTimeout',
      'clearTimeout',
      'setInterval',
      'clearInterval',
      'setImmediate',
      'clearImmediate',
    ] as const;
    const before = Object.fromEntries(names.map((n) => [n, g[n]]));
    const realImmediate = setImmediate;
    const dateNow = Date.now;
    const cancel = (t: unknown) => {
      if (t instanceof Timer) t.cancelled = true;
    };
    g.setTimeout = (fn: Timer['fn'], ms = 0, ...args: unknown[]) => this.timer(fn, ms, 0, args);
    g.setInterval = (fn: Timer['fn'], ms = 0, ...args: unknown[]) =>
      this.timer(fn, ms, Math.max(1, ms), args);
    g.setImmediate = (fn: Timer['fn'], ...args: unknown[]) => {
      const t = new Timer(this.now, this.seq++, fn, args, 0);
      this.immediates.push(t);
      return t;
    };
    g.clearTimeout = cancel;
    g.clearInterval = cancel;
    g.clearImmediate = cancel;
    Date.now = this.clock;
    return {
      setImmediate: realImmediate,
      restore: () => {
        for (const n of names) g[n] = before[n];
        Date.now = dateNow;
      },
    };
  }

  private timer(fn: Timer['fn'], ms: number, every: number, args: unknown[]): Timer {
    // As Node's: a delay below 1 ms (or not a number) is 1 ms.
    const delay = Number.isFinite(ms) && ms >= 1 ? ms : 1;
    const t = new Timer(this.now + delay, this.seq++, fn, args, every);
    this.push(t);
    return t;
  }

  /** When the next live timer is due; Infinity when none is. */
  private peek(): number {
    const heap = this.heap;
    while (heap.length > 0 && heap[0]!.cancelled) this.pop();
    return heap.length > 0 ? heap[0]!.at : Infinity;
  }

  private push(t: Timer): void {
    const heap = this.heap;
    let i = heap.length;
    heap.push(t);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(t, heap[parent]!)) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = t;
  }

  private pop(): Timer {
    const heap = this.heap;
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= heap.length) break;
        const r = l + 1;
        const child = r < heap.length && before(heap[r]!, heap[l]!) ? r : l;
        if (!before(heap[child]!, last)) break;
        heap[i] = heap[child]!;
        i = child;
      }
      heap[i] = last;
    }
    return top;
  }
}

function before(a: Timer, b: Timer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** One turn of the real event loop: every pending promise reaction runs before it ends. */
function turn(immediate: typeof setImmediate): Promise<void> {
  return new Promise((resolve) => immediate(resolve));
}

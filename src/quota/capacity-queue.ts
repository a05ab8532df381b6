/** What routing a waiting call answers: a target, or how long until room is expected. */
export type RouteAttempt<T> = { target: T } | { waitMs: number };

interface Waiter {
  route: () => RouteAttempt<unknown>;
  /** When it joined (epoch ms of the clock given). */
  joined: number;
  resolve: (target: unknown) => void;
  reject: (error: unknown) => void;
  deadline: NodeJS.Timeout | undefined;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

interface Line {
  waiters: Waiter[];
  timer: NodeJS.Timeout | undefined;
  /** When the line's timer fires (epoch ms of the clock given). */
  wakeAt: number;
  /** A serve() is scheduled for the next turn. */
  pending: boolean;
}

/**
 * Calls waiting per model when `maxQueued` is not set: each waiter holds its request, so a line
 * without a bound is memory a burst of callers can take.
 */
export const DEFAULT_MAX_QUEUED = 1_000;

/** Options of a {@link CapacityQueue}. */
export interface CapacityQueueOptions {
  maxWait: number;
  /** Default {@link DEFAULT_MAX_QUEUED}. */
  maxQueued?: number;
  clock?: () => number;
}

/**
 * Calls waiting for room, one line per model, first come first served. The head of a line is
 * routed again when the room it waits for is expected (one timer per line), or at once when
 * something frees room ({@link kick}); behind it nobody overtakes. A waiter leaves with its
 * caller's abort, or after `maxWait` with the error the caller builds.
 *
 * @example
 * ```ts
 * const queue = new CapacityQueue({ maxWait: 5000 });
 * const deployment = await queue.wait('gpt-4o-mini', () => route(), {
 *   signal,
 *   onTimeout: (waited) => noRoomError(RateLimitError, 'gpt-4o-mini', admission, 1000, waited),
 * });
 * ```
 */
export class CapacityQueue {
  private readonly lines = new Map<string, Line>();
  private readonly clock: () => number;
  private closed = false;

  constructor(private readonly options: CapacityQueueOptions) {
    this.clock = options.clock ?? Date.now;
  }

  /** The longest wait in ms. */
  get maxWait(): number {
    return this.options.maxWait;
  }

  /** Calls waiting for `model`. */
  length(model: string): number {
    return this.lines.get(model)?.waiters.length ?? 0;
  }

  /** How long (ms) the longest-waiting call for `model` has waited; 0 when none waits. */
  longestWait(model: string): number {
    const head = this.lines.get(model)?.waiters[0];
    return head === undefined ? 0 : Math.max(0, this.clock() - head.joined);
  }

  /** Calls waiting, per model (models with nobody waiting left out). */
  lengths(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [model, line] of this.lines) out[model] = line.waiters.length;
    return out;
  }

  /** True when a call for `model` may join its line (`maxQueued` not reached). */
  canJoin(model: string): boolean {
    const max = this.options.maxQueued ?? DEFAULT_MAX_QUEUED;
    return !this.closed && this.length(model) < max;
  }

  /**
   * Wait in `model`'s line until `route` finds a target. `onTimeout(waitedMs)` builds the error
   * of a call that waited `maxWait` in vain; `onAbort()` that of a caller's abort.
   */
  wait<T>(
    model: string,
    route: () => RouteAttempt<T>,
    o: {
      signal?: AbortSignal | null;
      onTimeout: (waitedMs: number) => unknown;
      onAbort: () => unknown;
    },
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const signal = o.signal ?? undefined;
      if (signal?.aborted) {
        reject(o.onAbort());
        return;
      }
      let line = this.lines.get(model);
      if (line === undefined) {
        line = { waiters: [], timer: undefined, wakeAt: 0, pending: false };
        this.lines.set(model, line);
      }
      const joined = this.clock();
      const waiter: Waiter = {
        route,
        joined,
        resolve: resolve as (target: unknown) => void,
        reject,
        deadline: undefined,
        signal,
        onAbort: undefined,
      };
      const leave = (error: unknown) => {
        if (!this.remove(model, waiter)) return;
        reject(error);
        // The head left: the next one may fit now.
        this.kick(model);
      };
      waiter.deadline = setTimeout(
        () => leave(o.onTimeout(this.clock() - joined)),
        this.options.maxWait,
      );
      if (signal) {
        waiter.onAbort = () => leave(o.onAbort());
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      line.waiters.push(waiter);
      if (line.waiters.length === 1) this.serve(model, line);
    });
  }

  /** Something freed room for `model` (usage refunded, a cooldown ended): try its line now. */
  kick(model: string): void {
    const line = this.lines.get(model);
    if (line !== undefined && line.waiters.length > 0) this.serve(model, line);
  }

  /** Try every line (a limit or a cooldown changed). */
  kickAll(): void {
    for (const model of [...this.lines.keys()]) this.kick(model);
  }

  /** Reject everyone still waiting and stop the timers. */
  close(error: () => unknown): void {
    this.closed = true;
    for (const [model, line] of this.lines) {
      for (const w of [...line.waiters]) {
        this.remove(model, w);
        w.reject(error());
      }
      clearTimeout(line.timer);
    }
    this.lines.clear();
  }

  private serve(model: string, line: Line): void {
    if (line.pending) return;
    while (line.waiters.length > 0) {
      const head = line.waiters[0]!;
      let attempt: RouteAttempt<unknown>;
      try {
        attempt = head.route();
      } catch (error) {
        this.remove(model, head);
        head.reject(error);
        continue;
      }
      if ('target' in attempt) {
        this.remove(model, head);
        head.resolve(attempt.target);
        // The next one is routed once this one's call has been charged (in the microtasks that
        // follow), so that it sees the room this one took.
        if (line.waiters.length > 0 && !line.pending) {
          line.pending = true;
          setImmediate(() => {
            line.pending = false;
            if (line.waiters.length > 0) this.serve(model, line);
          });
        }
        return;
      }
      // One timer per line, for the head: when room is expected (a kick may come sooner).
      const wakeAt = this.clock() + Math.max(1, attempt.waitMs);
      if (line.timer !== undefined && line.wakeAt <= wakeAt) return;
      clearTimeout(line.timer);
      line.wakeAt = wakeAt;
      line.timer = setTimeout(
        () => {
          line.timer = undefined;
          this.serve(model, line);
        },
        Math.max(1, attempt.waitMs),
      );
      return;
    }
    clearTimeout(line.timer);
    line.timer = undefined;
  }

  private remove(model: string, waiter: Waiter): boolean {
    const line = this.lines.get(model);
    if (line === undefined) return false;
    const i = line.waiters.indexOf(waiter);
    if (i < 0) return false;
    line.waiters.splice(i, 1);
    clearTimeout(waiter.deadline);
    if (waiter.signal && waiter.onAbort) {
      waiter.signal.removeEventListener('abort', waiter.onAbort);
    }
    if (line.waiters.length === 0) {
      clearTimeout(line.timer);
      line.timer = undefined;
    }
    return true;
  }
}

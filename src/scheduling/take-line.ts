/**
 * A verdict of one try to take room: taken, or refused with when room is expected (ms from now).
 *
 * @example
 * ```ts
 * const v: TakeVerdict = { ok: false, waitMs: 1_000 };
 * ```
 */
export type TakeVerdict = { ok: true } | { ok: false; waitMs: number };

/**
 * A call waiting for room that only a shared count can give (a tenant's limits): its tries, and
 * how it ends when it gets none.
 *
 * @example
 * ```ts
 * const w: TakeWaiter<TakeVerdict> = { take: () => counts.take(...), refused: (v) => tooMany(v), reject, signal };
 * ```
 */
export interface TakeWaiter<V extends TakeVerdict> {
  /** One try; on `ok` the waiter has its room (and has told its caller). */
  take(): Promise<V>;
  /** The error of a call that got no room: `last` is its last verdict (none: the line was full). */
  refused(last: V | undefined): Error;
  /** Ends the call with `error`. */
  reject(error: unknown): void;
  readonly signal?: AbortSignal;
}

interface Waiter<V extends TakeVerdict> {
  readonly w: TakeWaiter<V>;
  deadline: NodeJS.Timeout | undefined;
  onAbort: (() => void) | undefined;
  last: V | undefined;
  /** Its longest wait passed while its try was under way. */
  expired: boolean;
}

interface Line<V extends TakeVerdict> {
  waiters: Waiter<V>[];
  /** A try of its head is under way. */
  busy: boolean;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Lines of calls waiting, one per key (a tenant), first come first served, each for room that a
 * shared count gives back (answers settling, a window moving on): the head tries, and on a refusal
 * tries again when room is expected, or at once when {@link kick}ed. A call leaves after
 * `maxWait` with its last refusal, or when its signal aborts; past `maxQueued` waiting a call is
 * refused at once. Without a wait, each call tries once.
 *
 * @example
 * ```ts
 * const lines = new TakeLines({ maxWait: 10_000, maxQueued: 1_000 });
 * lines.join('acme', waiter);
 * lines.kick('acme'); // room came back
 * ```
 */
export class TakeLines<V extends TakeVerdict> {
  private readonly lines = new Map<string, Line<V>>();

  constructor(private readonly wait: { maxWait: number; maxQueued: number } | undefined) {}

  /** `w` waits in the line of `key` for its room. */
  join(key: string, w: TakeWaiter<V>): void {
    const wait = this.wait;
    if (wait === undefined || wait.maxWait <= 0) {
      // Nobody waits: each call takes its room or fails on its own.
      w.take().then(
        (v) => (v.ok ? undefined : w.reject(w.refused(v))),
        (error: unknown) => w.reject(error),
      );
      return;
    }
    let line = this.lines.get(key);
    if (line === undefined) {
      line = { waiters: [], busy: false, timer: undefined };
      this.lines.set(key, line);
    }
    if (line.waiters.length >= wait.maxQueued) {
      w.reject(w.refused(undefined));
      return;
    }
    const waiter: Waiter<V> = {
      w,
      deadline: undefined,
      onAbort: undefined,
      last: undefined,
      expired: false,
    };
    const leave = (error: unknown) => {
      const l = this.lines.get(key);
      const i = l?.waiters.indexOf(waiter) ?? -1;
      if (l === undefined || i < 0) return;
      if (i === 0 && l.busy) {
        // Its try is under way: it leaves when that answers, unless it got the room.
        waiter.expired = true;
        return;
      }
      l.waiters.splice(i, 1);
      forget(waiter);
      w.reject(error);
      this.pump(key);
    };
    const signal = w.signal;
    if (signal?.aborted) {
      w.reject(signal.reason);
      return;
    }
    waiter.deadline = setTimeout(() => leave(w.refused(waiter.last)), wait.maxWait);
    if (signal !== undefined) {
      waiter.onAbort = () => leave(signal.reason);
      signal.addEventListener('abort', waiter.onAbort, { once: true });
    }
    line.waiters.push(waiter);
    this.pump(key);
  }

  /** Room may have come back for `key`: its head tries now rather than when it was expected. */
  kick(key: string): void {
    const line = this.lines.get(key);
    if (line === undefined || line.busy) return;
    clearTimeout(line.timer);
    line.timer = undefined;
    this.pump(key);
  }

  /** Fail everyone waiting with `error()` and stop the timers. */
  close(error: () => unknown): void {
    for (const line of this.lines.values()) {
      clearTimeout(line.timer);
      for (const waiter of line.waiters.splice(0)) {
        forget(waiter);
        waiter.w.reject(error());
      }
    }
    this.lines.clear();
  }

  /** Try the head of `key`'s line; on room, the next one; else again when room is expected. */
  private pump(key: string): void {
    const line = this.lines.get(key);
    if (line === undefined || line.busy || line.timer !== undefined) return;
    const head = line.waiters[0];
    if (head === undefined) {
      this.lines.delete(key);
      return;
    }
    line.busy = true;
    head.w.take().then(
      (v) => {
        line.busy = false;
        head.last = v;
        if (v.ok) {
          line.waiters.shift();
          forget(head);
        } else if (head.expired) {
          line.waiters.shift();
          forget(head);
          head.w.reject(head.w.refused(v));
        } else {
          line.timer = setTimeout(() => {
            line.timer = undefined;
            this.pump(key);
          }, v.waitMs);
        }
        this.pump(key);
      },
      (error: unknown) => {
        line.busy = false;
        line.waiters.shift();
        forget(head);
        head.w.reject(error);
        this.pump(key);
      },
    );
  }
}

function forget<V extends TakeVerdict>(waiter: Waiter<V>): void {
  clearTimeout(waiter.deadline);
  if (waiter.onAbort !== undefined) waiter.w.signal?.removeEventListener('abort', waiter.onAbort);
}

/**
 * Something with a deadline, linked into a {@link Deadlines} list while it waits: told once, with
 * {@link expire}, when its deadline passes, unless removed first.
 *
 * @example
 * ```ts
 * const entry: DeadlineEntry = { expire: () => controller.abort(), deadlineList: undefined };
 * ```
 */
export interface DeadlineEntry {
  expire(): void;
  /** @internal The list it waits in, and its place there (set by {@link Deadlines}). */
  deadlineList?: DeadlineList | undefined;
  /** @internal */
  deadlineAt?: number;
  /** @internal */
  deadlinePrev?: DeadlineEntry | undefined;
  /** @internal */
  deadlineNext?: DeadlineEntry | undefined;
}

/**
 * Deadlines of many concurrent attempts on one timer per distinct duration, instead of one
 * `setTimeout` each: a Node timer costs a `Timeout` object and a list insertion per attempt (and
 * measured several µs per call on a busy heap), while every attempt of a deployment has the same
 * duration. Entries of one duration are added in time order, so each duration's list is sorted by
 * deadline: adding and removing are O(1), and its one timer is armed for the head. Entries carry
 * their own links, so adding allocates nothing. Timers follow `Date.now`, as Node's and Jest's
 * fake timers do.
 *
 * @example
 * ```ts
 * const deadlines = new Deadlines();
 * deadlines.add(attempt, 30_000); // attempt.expire() in 30 s
 * deadlines.remove(attempt); // answered first
 * ```
 */
export class Deadlines {
  private readonly lists = new Map<number, DeadlineList>();

  /** `entry.expire()` in `ms` (once), unless {@link remove}d first. */
  add(entry: DeadlineEntry, ms: number): void {
    let list = this.lists.get(ms);
    if (list === undefined) {
      list = new DeadlineList(ms, this.lists);
      this.lists.set(ms, list);
    }
    list.push(entry);
  }

  /** Forget `entry`'s deadline; nothing when it has none (already expired or removed). */
  remove(entry: DeadlineEntry): void {
    entry.deadlineList?.unlink(entry);
  }
}

/** @internal The entries of one duration, oldest first, and the one timer for the head. */
export class DeadlineList {
  private head: DeadlineEntry | undefined;
  private tail: DeadlineEntry | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** When the armed timer is due, by `Date.now()`. */
  private due = 0;

  constructor(
    private readonly ms: number,
    /** The lists by duration, which this one leaves when it empties (durations vary per call). */
    private readonly owner: Map<number, DeadlineList>,
  ) {}

  push(entry: DeadlineEntry): void {
    const at = Date.now() + this.ms;
    entry.deadlineAt = at;
    entry.deadlineList = this;
    entry.deadlinePrev = this.tail;
    entry.deadlineNext = undefined;
    if (this.tail === undefined) this.head = entry;
    else this.tail.deadlineNext = entry;
    this.tail = entry;
    if (this.timer === undefined) this.arm(at, this.ms);
  }

  unlink(entry: DeadlineEntry): void {
    const prev = entry.deadlinePrev;
    const next = entry.deadlineNext;
    if (prev === undefined) this.head = next;
    else prev.deadlineNext = next;
    if (next === undefined) this.tail = prev;
    else next.deadlinePrev = prev;
    entry.deadlineList = entry.deadlinePrev = entry.deadlineNext = undefined;
    if (this.head === undefined) {
      // Nothing left to wait for: no timer keeps the process (or a fake clock) busy.
      if (this.timer !== undefined) {
        clearTimeout(this.timer);
        this.timer = undefined;
      }
      if (this.owner.get(this.ms) === this) this.owner.delete(this.ms);
    }
  }

  private arm(due: number, ms: number): void {
    this.due = due;
    this.timer = setTimeout(fireList, ms, this);
  }

  /** The timer fired: expire every entry whose deadline has come, then wait for the next. */
  fire(): void {
    this.timer = undefined;
    // Node's timers run on their own clock, which may be a little ahead of `Date.now()`: what the
    // timer was armed for is due even if `Date.now()` does not say so yet.
    const now = Math.max(Date.now(), this.due);
    let entry = this.head;
    while (entry !== undefined && entry.deadlineAt! <= now) {
      this.unlink(entry);
      entry.expire();
      entry = this.head;
    }
    if (entry !== undefined && this.timer === undefined) {
      this.arm(entry.deadlineAt!, Math.max(1, entry.deadlineAt! - now));
    }
  }
}

const fireList = (list: DeadlineList): void => list.fire();

import { FairLine } from './fair-line';
import { LANES, UNTAGGED, type Lane } from './lanes';
import {
  DEFAULT_MAX_QUEUED,
  type CapacityQueueOptions,
  type QueueView,
  type Turn,
  type WaitOptions,
} from './queue-view';

interface Waiter {
  /** One try for room: at once (routing), or after a round trip (a shared count). */
  tryTurn: () => Turn<unknown, { waitMs: number }> | PromiseLike<Turn<unknown, { waitMs: number }>>;
  readonly lane: Lane;
  readonly tenant: string;
  /** Tokens of its admission charge (at least 1): its tenant's share pays for it. */
  readonly cost: number;
  /** When it joined (epoch ms of the clock given). */
  joined: number;
  resolve: (target: unknown) => void;
  reject: (error: unknown) => void;
  deadline: NodeJS.Timeout | undefined;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  /** The refusal of its last try. */
  last: { waitMs: number } | undefined;
  /** It must leave (its wait ran out, its caller aborted) once its try under way answers. */
  leaving: ((last: { waitMs: number } | undefined) => unknown) | undefined;
}

interface Line {
  /** One fair line per lane, in {@link LANES} order. */
  lanes: [FairLine<Waiter>, FairLine<Waiter>];
  timer: NodeJS.Timeout | undefined;
  /** When the line's timer fires (epoch ms of the clock given). */
  wakeAt: number;
  /** A serve() is scheduled for the next turn. */
  pending: boolean;
  /** The head whose try is under way (a round trip to a shared count), if any. */
  trying: Waiter | undefined;
}

/**
 * Calls waiting for room, one line per key: the one scheduler of the switchboard, whatever a call
 * waits for. Keyed by model, its calls wait for a deployment with room (quota, in-flight caps);
 * keyed by tenant, for the room its limits and budget give back. Interactive calls are served
 * before batch calls; within a lane, tenants take turns by deficit round robin on the calls'
 * admission charges ({@link FairLine}), and a tenant's calls keep their order. The call to serve
 * next (the head) tries again when the room it waits for is expected (one timer per line), or at
 * once when something frees room ({@link kick}); nobody overtakes it. A try may answer at once or
 * after a round trip; while it is under way the line waits for it. A waiter leaves with its
 * caller's abort, or after its lane's longest wait with the error the caller builds (a head whose
 * try is under way leaves when it answers, unless it got its room).
 *
 * @example
 * ```ts
 * const queue = new CapacityQueue({ maxWait: 5000, batchMaxWait: 60_000 });
 * const deployment = await queue.wait('gpt-4o-mini', () => route(), {
 *   signal,
 *   tags: { lane: 'batch', tenant: 'nightly' },
 *   cost: 1456,
 *   onAbort: () => new APIUserAbortError(),
 *   onTimeout: (waited) => noRoomError(RateLimitError, 'gpt-4o-mini', admission, 1000, { waited }),
 * });
 * ```
 */
export class CapacityQueue implements QueueView {
  private readonly lines = new Map<string, Line>();
  private readonly clock: () => number;
  private closed = false;
  /**
   * A try answered at once this turn, whose caller charges its room in the microtasks that
   * follow: until then no line is served (lines of two models may draw on one pool level); the
   * lines that would have been wait in {@link deferred} for the next turn.
   */
  private charging = false;
  private readonly deferred = new Map<string, Line>();

  constructor(private readonly options: CapacityQueueOptions) {
    this.clock = options.clock ?? Date.now;
  }

  /** The longest wait in ms (of an interactive call). */
  get maxWait(): number {
    return this.options.maxWait;
  }

  /** The longest wait in ms of a call in `lane`. */
  maxWaitOf(lane: Lane): number {
    return lane === 'batch' ? (this.options.batchMaxWait ?? this.options.maxWait) : this.maxWait;
  }

  /** Calls waiting in `key`'s line, in `lane` or in both. */
  length(key: string, lane?: Lane): number {
    const line = this.lines.get(key);
    if (line === undefined) return 0;
    if (lane !== undefined) return line.lanes[lane === 'batch' ? 1 : 0].size;
    return line.lanes[0].size + line.lanes[1].size;
  }

  /** How long (ms) the longest-waiting call of `key`'s line has waited; 0 when none waits. */
  longestWait(key: string, lane?: Lane): number {
    const line = this.lines.get(key);
    if (line === undefined) return 0;
    let joined = Infinity;
    for (const [i, fair] of line.lanes.entries()) {
      if (lane !== undefined && LANES[i] !== lane) continue;
      for (const head of fair.heads()) if (head.joined < joined) joined = head.joined;
    }
    return joined === Infinity ? 0 : Math.max(0, this.clock() - joined);
  }

  /** Calls waiting in `key`'s line per lane and tenant (lanes with nobody waiting left out). */
  waiting(key: string): Partial<Record<Lane, Map<string, number>>> {
    const line = this.lines.get(key);
    const out: Partial<Record<Lane, Map<string, number>>> = {};
    if (line === undefined) return out;
    line.lanes.forEach((fair, i) => {
      if (fair.size > 0) out[LANES[i]!] = fair.byTenant();
    });
    return out;
  }

  /** The keys (models) with calls waiting. */
  models(): IterableIterator<string> {
    return this.lines.keys();
  }

  /** True when a call of `lane` may join `key`'s line (`maxQueued` not reached). */
  canJoin(key: string, lane: Lane = 'interactive'): boolean {
    const max = this.options.maxQueued ?? DEFAULT_MAX_QUEUED;
    return !this.closed && this.length(key, lane) < max;
  }

  /**
   * Wait in `key`'s line until a try finds a target. `onTimeout(waitedMs, last)` builds the error
   * of a call that waited its lane's longest wait in vain; `onAbort()` that of a caller's abort.
   */
  wait<T, R extends { waitMs: number } = { waitMs: number }>(
    key: string,
    tryTurn: () => Turn<T, R> | PromiseLike<Turn<T, R>>,
    o: WaitOptions<R>,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const signal = o.signal ?? undefined;
      if (signal?.aborted) {
        reject(o.onAbort());
        return;
      }
      let line = this.lines.get(key);
      if (line === undefined) {
        line = {
          lanes: [new FairLine(), new FairLine()],
          timer: undefined,
          wakeAt: 0,
          pending: false,
          trying: undefined,
        };
        this.lines.set(key, line);
      }
      const { lane, tenant } = o.tags ?? UNTAGGED;
      const joined = this.clock();
      const onAdmit = o.onAdmit;
      const waiter: Waiter = {
        tryTurn,
        lane,
        tenant,
        cost: Math.max(1, o.cost ?? 1),
        joined,
        resolve:
          onAdmit === undefined
            ? (resolve as (target: unknown) => void)
            : (target) => {
                onAdmit(this.clock() - joined);
                resolve(target as T);
              },
        reject,
        deadline: undefined,
        signal,
        onAbort: undefined,
        last: undefined,
        leaving: undefined,
      };
      const leave = (error: (last: R | undefined) => unknown) => {
        if (this.lines.get(key)?.trying === waiter) {
          waiter.leaving = error as Waiter['leaving'];
          return;
        }
        if (!this.remove(key, waiter)) return;
        reject(error(waiter.last as R | undefined));
        // The head left: the next one may fit now.
        this.kick(key);
      };
      waiter.deadline = setTimeout(
        () => leave((last) => o.onTimeout(this.clock() - joined, last)),
        this.maxWaitOf(lane),
      );
      if (signal) {
        waiter.onAbort = () => leave(() => o.onAbort());
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      const fair = line.lanes[lane === 'batch' ? 1 : 0];
      fair.push(waiter);
      // A new head: the only call waiting, or the first interactive one ahead of batch calls.
      if (fair.size === 1 && (lane === 'interactive' || line.lanes[0].size === 0)) {
        this.serve(key, line);
      }
    });
  }

  /** Something freed room for `key` (usage refunded, a cooldown ended): try its line now. */
  kick(key: string): void {
    const line = this.lines.get(key);
    if (line !== undefined && sizeOf(line) > 0) this.serve(key, line);
  }

  /** Reject everyone still waiting and stop the timers. */
  close(error: () => unknown): void {
    this.closed = true;
    for (const line of this.lines.values()) {
      clearTimeout(line.timer);
      for (const fair of line.lanes) {
        for (const w of fair.clear()) {
          this.forget(w);
          w.reject(error());
        }
      }
    }
    this.lines.clear();
  }

  private serve(key: string, line: Line): void {
    if (line.pending || line.trying !== undefined) return;
    if (this.charging) return this.defer(key, line);
    for (;;) {
      const head = (line.lanes[0].size > 0 ? line.lanes[0] : line.lanes[1]).peek();
      if (head === undefined) break;
      let turn: ReturnType<Waiter['tryTurn']>;
      try {
        turn = head.tryTurn();
      } catch (error) {
        this.remove(key, head);
        head.reject(error);
        continue;
      }
      if (!isPromiseLike(turn)) {
        this.answered(key, line, head, turn, false);
        return;
      }
      line.trying = head;
      turn.then(
        (t) => {
          line.trying = undefined;
          if (!this.closed) this.answered(key, line, head, t, true);
        },
        (error: unknown) => {
          line.trying = undefined;
          if (this.closed) return;
          this.remove(key, head);
          head.reject(error);
          this.kick(key);
        },
      );
      return;
    }
    clearTimeout(line.timer);
    line.timer = undefined;
  }

  /**
   * The head's try answered: with a target it leaves and the next one is served; refused, it
   * leaves if it must, else its line waits until room is expected (a kick may come sooner).
   */
  private answered(
    key: string,
    line: Line,
    head: Waiter,
    turn: Turn<unknown, { waitMs: number }>,
    async: boolean,
  ): void {
    if ('target' in turn) {
      line.lanes[head.lane === 'batch' ? 1 : 0].take(head);
      this.forget(head);
      this.dropIfEmpty(key, line);
      head.resolve(turn.target);
      // A try that took a round trip has taken its room; one answered at once is charged by its
      // caller in the microtasks that follow, so the next one (of any line) is served after that.
      if (!async) this.startCharging();
      if (sizeOf(line) > 0) this.serve(key, line);
      return;
    }
    head.last = turn;
    if (head.leaving !== undefined) {
      this.remove(key, head);
      head.reject(head.leaving(turn));
      this.kick(key);
      return;
    }
    const wakeAt = this.clock() + Math.max(1, turn.waitMs);
    if (line.timer !== undefined && line.wakeAt <= wakeAt) return;
    clearTimeout(line.timer);
    line.wakeAt = wakeAt;
    line.timer = setTimeout(
      () => {
        line.timer = undefined;
        this.serve(key, line);
      },
      Math.max(1, turn.waitMs),
    );
  }

  /** Serve `line` next turn, once what was given at once this turn is charged. */
  private defer(key: string, line: Line): void {
    line.pending = true;
    this.deferred.set(key, line);
  }

  /** Room was given at once: lines wait for the next turn, when its caller has charged it. */
  private startCharging(): void {
    if (this.charging) return;
    this.charging = true;
    setImmediate(() => {
      this.charging = false;
      const lines = [...this.deferred];
      this.deferred.clear();
      for (const [k, l] of lines) {
        l.pending = false;
        if (this.closed || this.lines.get(k) !== l) continue;
        if (sizeOf(l) > 0) this.serve(k, l);
        else this.dropIfEmpty(k, l);
      }
    });
  }

  private remove(key: string, waiter: Waiter): boolean {
    const line = this.lines.get(key);
    if (line === undefined) return false;
    if (!line.lanes[waiter.lane === 'batch' ? 1 : 0].remove(waiter)) return false;
    this.forget(waiter);
    this.dropIfEmpty(key, line);
    return true;
  }

  /** The waiter's timer and abort listener go. */
  private forget(waiter: Waiter): void {
    clearTimeout(waiter.deadline);
    if (waiter.signal && waiter.onAbort) {
      waiter.signal.removeEventListener('abort', waiter.onAbort);
    }
  }

  /** A line nobody waits in stops its timer and is dropped (keys are not kept idle). */
  private dropIfEmpty(key: string, line: Line): void {
    if (sizeOf(line) > 0) return;
    clearTimeout(line.timer);
    line.timer = undefined;
    if (!line.pending && line.trying === undefined) this.lines.delete(key);
  }
}

function sizeOf(line: Line): number {
  return line.lanes[0].size + line.lanes[1].size;
}

function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown }).then === 'function';
}

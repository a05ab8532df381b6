import { FairLine } from './fair-line';
import { LANES, UNTAGGED, type CallTags, type Lane } from './lanes';

/** What routing a waiting call answers: a target, or how long until room is expected. */
export type RouteAttempt<T> = { target: T } | { waitMs: number };

interface Waiter {
  route: () => RouteAttempt<unknown>;
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
}

interface Line {
  /** One fair line per lane, in {@link LANES} order. */
  lanes: [FairLine<Waiter>, FairLine<Waiter>];
  timer: NodeJS.Timeout | undefined;
  /** When the line's timer fires (epoch ms of the clock given). */
  wakeAt: number;
  /** A serve() is scheduled for the next turn. */
  pending: boolean;
}

/**
 * Calls waiting per model and lane when `maxQueued` is not set: each waiter holds its request,
 * so a line without a bound is memory a burst of callers can take.
 */
export const DEFAULT_MAX_QUEUED = 1_000;

/** Options of a {@link CapacityQueue}. */
export interface CapacityQueueOptions {
  maxWait: number;
  /** The longest wait of a batch call; default `maxWait`. */
  batchMaxWait?: number;
  /** Calls waiting per model and lane at most; default {@link DEFAULT_MAX_QUEUED}. */
  maxQueued?: number;
  clock?: () => number;
}

/** How a call waits: its lane and tenant (default interactive, no tenant), its cost, its errors. */
export interface WaitOptions {
  signal?: AbortSignal | null;
  onTimeout: (waitedMs: number) => unknown;
  onAbort: () => unknown;
  tags?: CallTags;
  /** Tokens of the call's admission charge, for fairness across tenants; default 1. */
  cost?: number;
  /** Told when the call leaves the line with a target, after `waitedMs`. */
  onAdmit?: (waitedMs: number) => void;
}

/**
 * The switchboard's queue as its readers see it (`sb.queue`, a status page, the metrics): who
 * waits for which model, in which lane, for how long. The lines themselves are internal.
 *
 * @example
 * ```ts
 * const queue = sb.queue;
 * if (queue) console.log(`${queue.length('gpt-4o')} waiting, ${queue.longestWait('gpt-4o')} ms`);
 * ```
 */
export interface QueueView {
  /** The longest wait in ms (of an interactive call). */
  readonly maxWait: number;
  /** The longest wait in ms of a call in `lane`. */
  maxWaitOf(lane: Lane): number;
  /** Calls waiting for `model`, in `lane` or in both. */
  length(model: string, lane?: Lane): number;
  /** How long (ms) the longest-waiting call for `model` has waited; 0 when none waits. */
  longestWait(model: string, lane?: Lane): number;
  /** Calls waiting for `model` per lane and tenant key (lanes with nobody waiting left out). */
  waiting(model: string): Partial<Record<Lane, ReadonlyMap<string, number>>>;
  /** The models with calls waiting. */
  models(): IterableIterator<string>;
  /**
   * Let `model`'s waiting calls try for room now rather than when it was expected (after an
   * injected clock moved, say); the switchboard does so itself whenever it frees room.
   */
  kick(model: string): void;
}

/**
 * Calls waiting for room, one line per model: the scheduler of the switchboard. Interactive
 * calls are served before batch calls; within a lane, tenants take turns by deficit round robin
 * on the calls' admission charges ({@link FairLine}), and a tenant's calls keep their order. The
 * call to serve next (the head) is routed again when the room it waits for is expected (one timer
 * per line), or at once when something frees room ({@link kick}); nobody overtakes it. A waiter
 * leaves with its caller's abort, or after its lane's longest wait with the error the caller
 * builds.
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

  /** Calls waiting for `model`, in `lane` or in both. */
  length(model: string, lane?: Lane): number {
    const line = this.lines.get(model);
    if (line === undefined) return 0;
    if (lane !== undefined) return line.lanes[lane === 'batch' ? 1 : 0].size;
    return line.lanes[0].size + line.lanes[1].size;
  }

  /** How long (ms) the longest-waiting call for `model` has waited; 0 when none waits. */
  longestWait(model: string, lane?: Lane): number {
    const line = this.lines.get(model);
    if (line === undefined) return 0;
    let joined = Infinity;
    for (const [i, fair] of line.lanes.entries()) {
      if (lane !== undefined && LANES[i] !== lane) continue;
      for (const head of fair.heads()) if (head.joined < joined) joined = head.joined;
    }
    return joined === Infinity ? 0 : Math.max(0, this.clock() - joined);
  }

  /** Calls waiting for `model` per lane and tenant key (lanes with nobody waiting left out). */
  waiting(model: string): Partial<Record<Lane, Map<string, number>>> {
    const line = this.lines.get(model);
    const out: Partial<Record<Lane, Map<string, number>>> = {};
    if (line === undefined) return out;
    line.lanes.forEach((fair, i) => {
      if (fair.size > 0) out[LANES[i]!] = fair.byTenant();
    });
    return out;
  }

  /** The models with calls waiting. */
  models(): IterableIterator<string> {
    return this.lines.keys();
  }

  /** True when a call for `model` in `lane` may join its line (`maxQueued` not reached). */
  canJoin(model: string, lane: Lane = 'interactive'): boolean {
    const max = this.options.maxQueued ?? DEFAULT_MAX_QUEUED;
    return !this.closed && this.length(model, lane) < max;
  }

  /**
   * Wait in `model`'s line until `route` finds a target. `onTimeout(waitedMs)` builds the error
   * of a call that waited its lane's longest wait in vain; `onAbort()` that of a caller's abort.
   */
  wait<T>(model: string, route: () => RouteAttempt<T>, o: WaitOptions): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const signal = o.signal ?? undefined;
      if (signal?.aborted) {
        reject(o.onAbort());
        return;
      }
      let line = this.lines.get(model);
      if (line === undefined) {
        line = {
          lanes: [new FairLine(), new FairLine()],
          timer: undefined,
          wakeAt: 0,
          pending: false,
        };
        this.lines.set(model, line);
      }
      const { lane, tenant } = o.tags ?? UNTAGGED;
      const joined = this.clock();
      const onAdmit = o.onAdmit;
      const waiter: Waiter = {
        route,
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
      };
      const leave = (error: unknown) => {
        if (!this.remove(model, waiter)) return;
        reject(error);
        // The head left: the next one may fit now.
        this.kick(model);
      };
      waiter.deadline = setTimeout(
        () => leave(o.onTimeout(this.clock() - joined)),
        this.maxWaitOf(lane),
      );
      if (signal) {
        waiter.onAbort = () => leave(o.onAbort());
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      const fair = line.lanes[lane === 'batch' ? 1 : 0];
      fair.push(waiter);
      // A new head: the only call waiting, or the first interactive one ahead of batch calls.
      if (fair.size === 1 && (lane === 'interactive' || line.lanes[0].size === 0)) {
        this.serve(model, line);
      }
    });
  }

  /** Something freed room for `model` (usage refunded, a cooldown ended): try its line now. */
  kick(model: string): void {
    const line = this.lines.get(model);
    if (line !== undefined && sizeOf(line) > 0) this.serve(model, line);
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

  private serve(model: string, line: Line): void {
    if (line.pending) return;
    for (;;) {
      const fair = line.lanes[0].size > 0 ? line.lanes[0] : line.lanes[1];
      const head = fair.peek();
      if (head === undefined) break;
      let attempt: RouteAttempt<unknown>;
      try {
        attempt = head.route();
      } catch (error) {
        this.remove(model, head);
        head.reject(error);
        continue;
      }
      if ('target' in attempt) {
        fair.take(head);
        this.forget(head);
        this.dropIfEmpty(model, line);
        head.resolve(attempt.target);
        // The next one is routed once this one's call has been charged (in the microtasks that
        // follow), so that it sees the room this one took.
        if (sizeOf(line) > 0 && !line.pending) {
          line.pending = true;
          setImmediate(() => {
            line.pending = false;
            if (sizeOf(line) > 0) this.serve(model, line);
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
    if (!line.lanes[waiter.lane === 'batch' ? 1 : 0].remove(waiter)) return false;
    this.forget(waiter);
    this.dropIfEmpty(model, line);
    return true;
  }

  /** The waiter's timer and abort listener go. */
  private forget(waiter: Waiter): void {
    clearTimeout(waiter.deadline);
    if (waiter.signal && waiter.onAbort) {
      waiter.signal.removeEventListener('abort', waiter.onAbort);
    }
  }

  /** A line nobody waits in stops its timer and is dropped (models are few, but not kept idle). */
  private dropIfEmpty(model: string, line: Line): void {
    if (sizeOf(line) > 0) return;
    clearTimeout(line.timer);
    line.timer = undefined;
    if (!line.pending) this.lines.delete(model);
  }
}

function sizeOf(line: Line): number {
  return line.lanes[0].size + line.lanes[1].size;
}

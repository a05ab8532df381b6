import type { Admission, ChargeUnit } from './admission';
import type { Correction } from './correction';
import type { PeerUsage } from './peer-usage';
import type { LimitName, QuotaLimit } from './quota-limit';
import type { HeaderSource, ReportedLimit } from './rate-limit-headers';
import type { LimitListener, ReportedRemaining, SharedReading } from './reading';
import type { UsageCount } from './drain-count';

/**
 * What the counters of one ledger share, written by the ledger only: the window length and the
 * peers' usage the shared state store last brought.
 */
export interface CounterScope {
  /** Length (ms) of the window usage is counted over (the span corrections fade over). */
  span: number;
  /** Usage other instances reported; `undefined` without a shared state store. */
  peers: PeerUsage | undefined;
  /** The upstream's last reported remaining, per limit, for operators. */
  readonly reported: Partial<Record<LimitName, ReportedRemaining>>;
  /**
   * Told when a limit is learned from this instance's own answers at `now`, or corrected by them
   * (a value below the configured one holds for {@link span} from then).
   */
  learned(limit: QuotaLimit, value: number, now?: number): void;
}

/**
 * A fresh scope of `span` ms, whose `learned` learns the limit and, when it changed, tells
 * `onChange` (first) and `onLimit`.
 *
 * @example
 * ```ts
 * const scope = counterScope(60_000, (limit, value) => console.log(`${limit} is ${value}`));
 * ```
 */
export function counterScope(
  span: number,
  onLimit?: LimitListener,
  onChange?: () => void,
): CounterScope {
  return {
    span,
    peers: undefined,
    reported: {},
    learned(limit, value, now) {
      const configured = limit.configured !== undefined && limit.configured > 0;
      const was = limit.learn(value, now, now === undefined ? 0 : this.span);
      if (was === undefined) return;
      onChange?.();
      onLimit?.(limit.name, value, was, configured);
    },
  };
}

/** One answer's reading, as each counter takes its part of it. */
export interface Anchoring {
  now: number;
  /** When the answered call was sent (the upstream's count is of that moment). */
  sentAt: number;
  /** Our own call this answer is for, while it is in flight (its answer says it was counted). */
  own: Admission | undefined;
  /** Another instance's reading (a shared state store brought it); `undefined` for our own. */
  peer: SharedReading | undefined;
  /** Whether a difference the upstream counts may be read as others' pace. */
  paceOk: boolean;
  /** Our own answer's headers, where its reset headers may be read (Azure OpenAI's). */
  headers?: HeaderSource;
}

/**
 * One limit of a model on a deployment, as one counter: its usage, the correction the upstream's
 * headers call for, and the answers to the ledger's questions for that limit alone. The ledger
 * loops over its counters: room = every counter fits, util = the largest share, roomAt = the
 * longest wait.
 *
 * @example
 * ```ts
 * const ok = counters.every((c) => fits(c, admission, now));
 * ```
 */
export interface LimitCounter {
  /** What it counts of a call (see `chargeOf`). */
  readonly unit: ChargeUnit;
  /** What `admission` charges this limit, by the one charge rule (`chargeOf`). */
  charge(admission: Admission): number;
  /**
   * The largest charge of this limit that fits at `now` by the anchored view, for a call that
   * keeps `admission`'s reserve (none: the whole limit), by `roomLeft`: a call fits exactly when
   * its charge is at most this ({@link fits}). `Infinity` when unlimited.
   */
  room(now: number, admission?: Admission): number;
  /** usage / limit at `now` by the anchored view, with what others are expected to add; 0 when unlimited. */
  share(now: number): number;
  /**
   * The first time from `now` on when {@link share} can change by time alone (usage sliding out, a
   * correction fading, the upstream's window ending): until then only a charge, an answer or a
   * peer's usage changes it. `now` when it changes continuously.
   */
  changesAt(now: number): number;
  /** ms until `admission` fits as usage slides out and corrections end (0 when unlimited). */
  wait(admission: Admission, now: number): number;
  /** Charge a call sent at `now` to the counter's window; it is in flight until {@link answered}. */
  admit(admission: Admission, now: number): void;
  /** An admitted call was answered (or failed). */
  answered(admission: Admission): void;
  /**
   * A call's tokens changed by `input` and `output` (its answer reconciled them; negative: given
   * back, as when it failed before the upstream produced anything): count the change in this
   * limit's unit. A request stays counted.
   */
  settle(input: number, output: number, now: number): void;
  /** Forget what an upstream window that ended by `now` counted. */
  catchUp(now: number): void;
  /** Forget usage and corrections. */
  reset(): void;
}

/**
 * Whether `admission` fits `counter` at `now` by the anchored view: its charge is at most the room
 * left (always, when unlimited).
 *
 * @example
 * ```ts
 * const ok = gating.every((c) => fits(c, admission, now));
 * ```
 */
export function fits(counter: LimitCounter, admission: Admission, now: number): boolean {
  return counter.charge(admission) <= counter.room(now, admission);
}

/**
 * ms until `window` plus its `correction` is at most `target`: the sooner of usage sliding
 * out and the correction fading, over a window of `span` ms. `end` (epoch ms, 0 = none) is when
 * the upstream's window is known to end: it then forgets all it counted, except the calls in
 * flight (`pending`).
 *
 * @example
 * ```ts
 * const ms = waitFor(tokens.window, tokens.correction, tpm.value - 1_456, now, { span: 60_000 });
 * ```
 */
export function waitFor(
  window: UsageCount,
  correction: Correction,
  target: number,
  now: number,
  { span, end = 0, pending = 0 }: { span: number; end?: number; pending?: number },
): number {
  const c = correction.at(now, span);
  let bySliding = window.timeUntil(target - Math.max(0, c), Infinity, now);
  if (end > now && pending <= target && end - now < bySliding) bySliding = end - now;
  // A correction held until the window ends does not fade.
  if (c <= 0 || correction.holds) return bySliding;
  // The correction fades linearly to 0: c(t) = c * (1 - dt / rest).
  const need = target - window.at(now);
  if (need < 0) return bySliding;
  const byFading = need >= c ? 0 : correction.fadeLeft(now, span) * (1 - need / c);
  return Math.min(bySliding, byFading);
}

/**
 * Note the upstream's reported remaining for operators (the newest answer wins), and learn the
 * limit it reports from our own answers only: a peer's reading never sets a limit. False when
 * there is nothing to anchor on (no remaining, no limit, or the remaining of a pool whose share
 * is configured here).
 *
 * @example
 * ```ts
 * if (!takeReported(limit, reported, context, scope)) return; // nothing to anchor on
 * ```
 */
export function takeReported(
  limit: QuotaLimit,
  reported: ReportedLimit,
  context: Anchoring,
  scope: CounterScope,
): reported is ReportedLimit & { remaining: number } {
  if (reported.limit !== undefined && context.peer === undefined) {
    scope.learned(limit, reported.limit, context.now);
  }
  if (reported.remaining === undefined || limit.value === 0) return false;
  const at = context.peer?.at ?? context.now;
  // Written over, not made again: every answer with headers comes here, once per limit.
  const last = scope.reported[limit.name];
  if (last === undefined) scope.reported[limit.name] = { remaining: reported.remaining, at };
  else if (last.at <= at) {
    last.remaining = reported.remaining;
    last.at = at;
  }
  // A pool's remaining says nothing of the share configured here: the split holds by itself.
  return !limit.pooled;
}

/**
 * The counters of a ledger with a limit in force, in the order they are asked: they alone can
 * refuse room or add to utilization (an unlimited counter fits everything and shares 0), so the
 * loops of every call skip the rest. Built again when a limit is learned or the window changes.
 */
export function gatingOf(counters: {
  tokens: LimitCounter & { limit: QuotaLimit };
  requests: LimitCounter & { limit: QuotaLimit };
  burst: LimitCounter & { active: boolean };
  input: LimitCounter & { limit: QuotaLimit };
  output: LimitCounter & { limit: QuotaLimit };
}): readonly LimitCounter[] {
  const { tokens, requests, burst, input, output } = counters;
  const gating: LimitCounter[] = [];
  if (tokens.limit.value > 0) gating.push(tokens);
  if (requests.limit.value > 0) gating.push(requests);
  if (burst.active) gating.push(burst);
  if (input.limit.value > 0) gating.push(input);
  if (output.limit.value > 0) gating.push(output);
  return gating;
}

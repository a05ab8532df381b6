import { chargeOf, type Admission, type ChargeUnit } from '../../quota/admission';
import type { LimitCounter } from '../../quota/limit-counter';
import type { MeterAsk, MeterGrant } from './lease-script';

/**
 * How one limit is metered upstream, as a lease meter reads it from its ledger each time: the
 * limit in force (0: none, the meter then gates nothing), and the window or bucket it is counted
 * in.
 *
 * @example
 * ```ts
 * const spec: MeterSpec = { meter: 'tokens', unit: 'tokens', kind: 'w',
 *   limit: () => ledger.limits.tpm.value, lengthMs: () => 60_000 };
 * ```
 */
export interface MeterSpec {
  meter: 'tokens' | 'requests' | 'input' | 'output';
  unit: ChargeUnit;
  kind: 'w' | 'b';
  limit(): number;
  lengthMs(): number;
}

/** What a meter tells the book it belongs to. */
interface MeterOwner {
  /** A call (`admission`) did not fit, or the lease ran low: exchange with the store now. */
  request(admission?: Admission): void;
}

/**
 * One limit's lease, as a limit of its own in the ledger (a `LimitCounter`): a call fits while
 * its charge is at most what the lease has left, which only this replica spends, without asking
 * anyone. A window's lease ends a little before its window does (the last calls of a window are
 * not sent into the next one); a bucket's lasts until it is spent or handed back.
 *
 * @example
 * ```ts
 * const meter = new LeaseMeter(spec, book, 0.05);
 * ledger.gate([meter]);
 * ```
 */
export class LeaseMeter implements LimitCounter {
  readonly unit: ChargeUnit;
  /** What is left to spend (negative: spent beyond the grant, owed to the store). */
  balance = 0;
  /** When a window's lease ends (epoch ms; 0: none held, or a bucket). */
  end = 0;
  /** When the store's window last granted from ends (epoch ms), held or not. */
  private storeEnd = 0;
  /** The largest charge that did not fit since the last exchange. */
  want = 0;
  /** The last call's charge: what an idle lease keeps when it hands back the rest. */
  lastCharge = 0;
  /** When a call last spent from it (epoch ms). */
  lastUse = 0;
  /** Room the store had left after the last exchange. */
  storeRoom = Infinity;
  /** Until when the store had no room for {@link want} (epoch ms): no new ask before. */
  refusedUntil = 0;
  /** Asks refused in a row: each waits twice as long before the next (up to {@link POLL_MS} × 8). */
  private refusals = 0;
  /** Spent while the store could not be reached: owed to it once it is back. */
  spentAway = 0;
  /** Whether the lease comes from this process (the store cannot be reached). */
  away = false;
  /** A bucket's calls sent and not answered, by their charge here: the upstream may not have charged them yet. */
  private readonly flying = new Map<Admission, number>();
  private inFlight = 0;
  /** What the store counts this replica as holding of a bucket ({@link held} at the last exchange, and its grant). */
  private reported = 0;
  /** When the store last heard what this replica holds (epoch ms). */
  private reportedAt = 0;

  constructor(
    readonly spec: MeterSpec,
    private readonly owner: MeterOwner,
  ) {
    this.unit = spec.unit;
  }

  /** Whether a limit is in force for it (else it gates nothing). */
  get active(): boolean {
    return this.spec.limit() > 0;
  }

  charge(admission: Admission): number {
    return chargeOf(this.unit, admission.input, admission.output);
  }

  room(now: number, admission?: Admission): number {
    if (!this.active) return Infinity;
    this.catchUp(now);
    if (admission !== undefined) {
      const charge = this.charge(admission);
      if (charge > this.balance) {
        if (charge > this.want) this.want = charge;
        if (now >= this.refusedUntil) this.owner.request(admission);
      }
    }
    return this.balance;
  }

  share(): number {
    // The ledger's own limits say how full the upstream is; a lease only says what is ours.
    return 0;
  }

  changesAt(now: number): number {
    return now;
  }

  wait(admission: Admission, now: number): number {
    if (!this.active) return 0;
    const charge = this.charge(admission);
    if (charge <= this.balance) return 0;
    // Refused: room comes back when the window ends or the bucket refills (or someone hands
    // back); else the exchange under way wakes the queue when it brings a lease, and this is
    // only when to look again if it brings none.
    return this.refusedUntil > now ? this.refusedUntil - now : EXCHANGE_WAIT_MS;
  }

  admit(admission: Admission, now: number): void {
    if (!this.active) return;
    const charge = this.charge(admission);
    this.balance -= charge;
    this.lastCharge = charge;
    this.lastUse = now;
    if (this.spec.kind === 'b') {
      this.flying.set(admission, (this.flying.get(admission) ?? 0) + charge);
      this.inFlight += charge;
    }
    if (this.away) this.spentAway += charge;
    // Kept ready for the next call while the store has room to spare (a session's or a stored
    // response's deployment then has its lease when the call comes), within this window.
    if (this.balance < charge && this.storeRoom >= this.spec.limit() / 4) this.owner.request();
  }

  answered(admission: Admission): void {
    // A lease is spent at admission; the answer's usage comes through settle. By now the
    // upstream has charged the call (output tokens as they were produced).
    const charge = this.flying.get(admission);
    if (charge === undefined) return;
    this.flying.delete(admission);
    this.inFlight = Math.max(0, this.inFlight - charge);
  }

  /**
   * What of a bucket this replica may still put on the upstream's count: its lease's balance and
   * the calls in flight (Anthropic charges output as it is produced; a call's input, when it
   * arrives). 0 for a window, whose count the store keeps whole.
   */
  held(): number {
    return this.spec.kind === 'b' ? Math.max(0, this.balance) + this.inFlight : 0;
  }

  /**
   * Whether the store should hear what this replica holds of a bucket without any other reason
   * to exchange: before its part expires with the peer TTL while it still holds some, or when it
   * holds less than the store counts, and the store has room enough that its count of what is
   * held is what keeps it from refilling.
   */
  reportDue(now: number): boolean {
    if (this.spec.kind !== 'b' || !this.active || this.away || this.reported <= 0) return false;
    if (now - this.reportedAt >= KEEP_MS) return true;
    return (
      now - this.reportedAt >= REPORT_MS &&
      this.held() < this.reported &&
      this.storeRoom >= this.spec.limit() / 2
    );
  }

  /** An exchange that only tells the store what this replica holds of a bucket, if it differs or is due. */
  report(now: number): PendingAsk | undefined {
    if (this.spec.kind !== 'b' || !this.active || this.away) return undefined;
    const held = this.held();
    if (held === this.reported && !this.reportDue(now)) return undefined;
    return { meter: this, fromBalance: 0, owed: 0, report: true, ask: this.askOf(0, 0, held) };
  }

  settle(input: number, output: number, now: number): void {
    const change = chargeOf(this.unit, input, output, 0);
    if (change === 0 || !this.active) return;
    this.catchUp(now);
    // A window that ended took its count with it: without a lease of the next, nothing is owed
    // (with one, the change is taken from it: on the safe side).
    if (this.spec.kind === 'w' && this.end === 0) return;
    this.balance -= change;
  }

  catchUp(now: number): void {
    if (this.spec.kind === 'w' && this.end !== 0 && now >= this.end - guardOf(this.spec)) {
      this.balance = 0;
      this.end = 0;
    }
  }

  reset(): void {
    // Leases are the store's count, not usage this replica may forget.
  }

  /** Whether the store's room is short (below a quarter of the limit): others may want it. */
  get short(): boolean {
    return this.storeRoom < this.spec.limit() / 4;
  }

  /**
   * Whether what it holds has lain idle since `idleBefore` where the store's room is short. A
   * lease never spent from is the one a first call finds: it is kept.
   */
  idle(idleBefore: number): boolean {
    return this.lastUse > 0 && this.lastUse < idleBefore && this.balance > 0 && this.short;
  }

  /**
   * What to ask the store in the next exchange, taking out of the balance what is handed back
   * (all of it when it lay {@link idle} since `idleBefore`) or owed; `undefined` when there is
   * nothing to ask, give or owe.
   */
  ask(now: number, share: number, idleBefore?: number): PendingAsk | undefined {
    if (!this.active) return undefined;
    this.catchUp(now);
    const idle = idleBefore !== undefined && this.idle(idleBefore);
    // An idle lease, or any where the room is short, asks only for the call that waits, not for
    // one more like its last: that would be refused where the waiting call fits.
    const low =
      idle || (this.short && this.want > 0) ? this.want : Math.max(this.want, this.lastCharge);
    let need = low > this.balance ? Math.ceil(low - Math.max(0, this.balance)) : 0;
    let fromBalance = 0;
    if (this.balance < 0) fromBalance = this.balance;
    else if (idle && need === 0) {
      fromBalance = this.balance;
    } else if (need > 0 && this.balance > 0 && this.short && now >= this.refusedUntil) {
      // Handed back in the same step as the ask for a whole charge: granted, the call fits as
      // before; refused, the part that fits no call here goes where another replica's may fit.
      fromBalance = this.balance;
      need = Math.ceil(low);
    }
    const owed = Math.min(this.spentAway, this.spec.limit());
    // In a window's last moments a grant could not be spent: ask once the next one opens.
    if (
      this.spec.kind === 'w' &&
      now >= this.storeEnd - guardOf(this.spec) &&
      now < this.storeEnd
    ) {
      this.refusedUntil = Math.max(this.refusedUntil, this.storeEnd);
    }
    const asked = need > 0 && now >= this.refusedUntil ? need : 0;
    if (asked === 0 && fromBalance === 0 && owed === 0) return undefined;
    this.balance -= fromBalance;
    this.spentAway = 0;
    const ask = this.askOf(asked, fromBalance - owed, this.held());
    ask.share = share;
    return { meter: this, fromBalance, owed, report: false, ask };
  }

  private askOf(need: number, give: number, held: number): MeterAsk {
    return {
      meter: this.spec.meter,
      kind: this.spec.kind,
      limit: this.spec.limit(),
      lengthMs: this.spec.lengthMs(),
      need,
      share: 0,
      give,
      leaseEnd: this.end,
      hint: 0,
      read: -1,
      held,
    };
  }

  /**
   * What the store answered; `grant` undefined when the exchange failed: a debt is owed again,
   * a part handed back is taken as lost (the store may have it back).
   */
  granted(pending: PendingAsk, grant: MeterGrant | undefined, now: number): void {
    const { ask } = pending;
    if (grant === undefined) {
      if (pending.fromBalance < 0) this.balance += pending.fromBalance;
      this.spentAway += pending.owed;
      return;
    }
    this.reported = ask.held + grant.grant;
    this.reportedAt = now;
    this.storeRoom = grant.room;
    // Only told the store what it holds: what it waits for is still to ask.
    if (pending.report) return;
    this.want = 0;
    if (this.spec.kind === 'w') {
      // What is left of a lease of a window the store has since closed is not spent in the next.
      if (this.end !== 0 && grant.end > this.end && this.balance > 0 && now >= this.end) {
        this.balance = 0;
      }
      this.end = grant.end;
      this.storeEnd = grant.end;
    }
    this.balance += grant.grant;
    if (grant.grant > 0) this.refusals = 0;
    const refused = ask.need > 0 && grant.grant === 0;
    if (refused) this.refusals++;
    this.refusedUntil = refused
      ? now + refusalWait(this.spec, ask.need, grant, now, this.refusals)
      : 0;
  }
}

/** One meter's part of an exchange under way. */
export interface PendingAsk {
  meter: LeaseMeter;
  ask: MeterAsk;
  /** Taken out of the balance: handed back (> 0) or a debt (< 0). */
  fromBalance: number;
  /** Spent while the store could not be reached, now owed to it. */
  owed: number;
  /** Only tells the store what is held (see {@link LeaseMeter.report}). */
  report: boolean;
}

/** A bucket's holder tells the store what it holds at least this often while it holds any (ms): well within the peer TTL its part expires with. */
const KEEP_MS = 20_000;
/** And this often when it holds less than the store counts, while the store has room (ms). */
const REPORT_MS = 5_000;

/** When a call whose lease is being fetched looks again, unless the lease wakes it sooner (ms). */
const EXCHANGE_WAIT_MS = 50;

/** The longest a refused ask waits before asking again: someone may hand back sooner. */
const POLL_MS = 1_000;

/**
 * ms until the store has room for `need` again: a window's end, or the time a bucket takes to
 * refill what is missing; sooner, as another replica may hand back: {@link POLL_MS} after a first
 * refusal, doubling with each refusal in a row (most hand-backs come within a second or two of the
 * room running short, and a queue polling a window that stays full costs a round trip each time).
 */
function refusalWait(
  spec: MeterSpec,
  need: number,
  grant: MeterGrant,
  now: number,
  refusals: number,
): number {
  const poll = POLL_MS * 2 ** (Math.min(Math.max(refusals, 1), 4) - 1);
  if (spec.kind === 'w') return Math.max(1, Math.min(poll, grant.end - now));
  const limit = spec.limit();
  const missing = need - grant.room;
  const refill = limit > 0 ? (missing / limit) * spec.lengthMs() : poll;
  return Math.max(1, Math.min(poll, Math.ceil(refill)));
}

/**
 * How long before its window ends a window's lease stops admitting: a call admitted then could
 * reach the upstream after the window rolled, where no lease counted it.
 */
function guardOf(spec: MeterSpec): number {
  return Math.min(250, spec.lengthMs() / 20);
}

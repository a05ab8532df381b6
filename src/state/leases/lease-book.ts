import type { Admission } from '../../quota/admission';
import type { SharedReading } from '../../quota/reading';
import type { ModelState } from '../../registry/model-state';
import type { RedisClientLike } from '../redis/redis-client';
import { bounded } from '../redis/redis-connection';
import { specsOf, type LeaseHolder } from './lease-holder';
import { LeaseMeter, type PendingAsk } from './lease-meter';
import {
  LEASE_SCRIPT,
  leaseArgs,
  localGrant,
  readLeaseReply,
  type LeaseReply,
  type MeterAsk,
} from './lease-script';

/** What a lease book borrows from its store. */
export interface LeaseContext {
  /** The client while the store is reachable; undefined while it is not. */
  client(): RedisClientLike | undefined;
  prefix(): string;
  /** This replica's id in the store. */
  readonly id: string;
  /** Fraction of the room left a lease takes. */
  readonly share: number;
  readonly timeout: number;
  /** How long a replica counts as present after its last exchange (ms). */
  readonly peerTtlMs: number;
  readonly skewMs: number;
  clock(): number;
  /** Replicas the limits are split among while the store cannot be reached. */
  replicas(): number;
  degrade(error: unknown): void;
  skipped(what: string): void;
  /** One exchange went to the store (a round trip). */
  exchanged(peers: number | undefined): void;
  /** Leases granted, shrunk to one call's charge, or handed back, under a book's attributes. */
  counted(
    attributes: Readonly<Record<string, string>>,
    result: 'granted' | 'shrunk' | 'returned',
  ): void;
}

/** Anthropic rounds its remaining tokens to thousands: a reading may be this much above the truth. */
const ROUNDING = 500;

/**
 * The leases of one limit holder (a model on a deployment, a quota pool, or a level of a pool
 * path, see {@link LeaseHolder}): a {@link LeaseMeter} per limit it meters, added to its ledger
 * (a level's: to every member's) as limits of their own, and the exchanges with the
 * store that fill them. One exchange at a time; asks that come while one is under way go in the
 * next. While the store cannot be reached, leases come from this process, out of `1 / replicas`
 * of each limit.
 *
 * @example
 * ```ts
 * const book = new LeaseBook(ledger, [state], 'east:gpt-4o', context);
 * book.request(); // exchange soon
 * ```
 */
export class LeaseBook {
  readonly meters: readonly LeaseMeter[];
  /** What its leases are counted under in `switchboard.leases`. */
  readonly attributes: Readonly<Record<string, string>>;
  private running: Promise<void> | undefined;
  private again = false;
  private readonly local = new Map<LeaseMeter, { a: number; b: number }>();
  /** When the last reading handed to the store was sent (epoch ms). */
  private readSentAt = 0;

  constructor(
    private readonly holder: LeaseHolder,
    private readonly states: readonly ModelState[],
    private readonly field: string,
    private readonly context: LeaseContext,
  ) {
    this.attributes = holder.attributes ?? states[0]!.attributes;
    this.meters = specsOf(holder).map((spec) => new LeaseMeter(spec, this));
    holder.gate(this.meters);
  }

  /** Whether an exchange with the store is under way. */
  get exchanging(): boolean {
    return this.running !== undefined;
  }

  /**
   * Exchange now: a call did not fit, or a lease ran low. Every limit the call does not fit asks
   * in the same round trip (the ledger stops at the first that refuses).
   */
  request(admission?: Admission): void {
    if (admission !== undefined) {
      for (const m of this.meters) {
        // A limit not in force (Claude's combined tpm, unless a workspace sets one) wants
        // nothing: a want kept there would be asked for at once if one is learned later.
        if (!m.active) continue;
        const charge = m.charge(admission);
        if (charge > m.balance && charge > m.want) m.want = charge;
      }
    }
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    // Away from the store a lease is granted here and now, so the call that asked fits at once.
    if (this.context.client() === undefined) {
      this.exchangeLocally();
      return;
    }
    this.running = this.exchange().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.request();
      }
    });
  }

  /**
   * Hand back what has lain idle since `idleBefore` where the store's room is short (below a
   * quarter of the limit: others may be waiting for it), and what was spent away from the store.
   */
  tend(idleBefore: number, now = this.context.clock()): void {
    if (this.running !== undefined) return;
    const idle = this.meters.some((m) => m.idle(idleBefore));
    const owed = this.meters.some((m) => m.spentAway > 0);
    const report = this.meters.some((m) => m.reportDue(now));
    if (!idle && !owed && !report) return;
    if (this.context.client() === undefined) {
      if (idle) this.exchangeLocally(idleBefore);
      return;
    }
    this.running = this.exchange(idle ? idleBefore : undefined).finally(() => {
      this.running = undefined;
    });
  }

  /** Take a first lease for every limit that holds none (a share of its room, at least 1). */
  warm(): void {
    for (const m of this.meters) if (m.active && m.balance <= 0 && m.want < 1) m.want = 1;
    this.request();
  }

  /** The store cannot be reached: leases come from this process from now on. */
  goAway(): void {
    for (const m of this.meters) m.away = true;
  }

  /** The store is back. */
  comeBack(): void {
    this.local.clear();
    for (const m of this.meters) m.away = false;
  }

  private asks(now: number, idleBefore: number | undefined): PendingAsk[] {
    const pending: PendingAsk[] = [];
    for (const m of this.meters) {
      const p = m.ask(now, this.context.share, idleBefore);
      if (p !== undefined) pending.push(p);
    }
    // What the other buckets hold rides along in a round trip made anyway, when it changed;
    // alone, only when it is due.
    const alone = pending.length === 0;
    for (const m of this.meters) {
      if (pending.some((p) => p.meter === m) || (alone && !m.reportDue(now))) continue;
      const p = m.report(now);
      if (p !== undefined) pending.push(p);
    }
    return pending;
  }

  private async exchange(idleBefore?: number): Promise<void> {
    const { context } = this;
    const client = context.client();
    const now = context.clock();
    const pending = this.asks(now, idleBefore);
    if (client === undefined || pending.length === 0) {
      for (const p of pending) p.meter.granted(p, undefined, now);
      return;
    }
    const readSentAt = this.withReading(pending, now);
    const asks = pending.map((p) => p.ask);
    const prefix = context.prefix();
    const keys = [`${prefix}lease:${this.field}`, `${prefix}lease-peers`];
    const args = leaseArgs(
      { now, id: context.id, peerTtlMs: context.peerTtlMs, skewMs: context.skewMs },
      asks,
    );
    let reply: LeaseReply | undefined;
    try {
      const raw = await bounded(
        client.eval(LEASE_SCRIPT, 2, ...keys, ...args),
        'lease',
        context.timeout,
      );
      reply = readLeaseReply(raw, asks, now, context.skewMs);
      if (reply === undefined) throw new Error('the lease script answered something else');
    } catch (error) {
      for (const p of pending) p.meter.granted(p, undefined, now);
      context.degrade(error);
      return;
    }
    if (readSentAt > this.readSentAt) this.readSentAt = readSentAt;
    context.exchanged(reply.peers);
    if (reply.bad !== undefined)
      context.skipped(`a lease field that is not a number (${reply.bad})`);
    this.apply(
      pending,
      reply.grants.map((g) => g),
      context.clock(),
    );
  }

  private exchangeLocally(idleBefore?: number): void {
    const now = this.context.clock();
    const pending = this.asks(now, idleBefore);
    if (pending.length === 0) return;
    const n = Math.max(1, this.context.replicas());
    this.withReading(pending, now);
    const grants = pending.map((p) => {
      let held = this.local.get(p.meter);
      if (held === undefined) this.local.set(p.meter, (held = this.startAway(p.ask, n, now)));
      // What is owed is the store's, not this process's: the part here starts from the lease's.
      return localGrant(held, { ...p.ask, limit: p.ask.limit / n, give: p.fromBalance }, now);
    });
    for (const p of pending) p.meter.spentAway += p.owed;
    for (const p of pending) p.owed = 0;
    this.apply(pending, grants, now);
  }

  /**
   * This process's part of a limit as the store goes away: what this replica spent of it in the
   * last minute counts as spent already (an upper bound of its part of the upstream's window or
   * bucket as it stands), so that it does not take its whole part again on top.
   */
  private startAway(ask: MeterAsk, n: number, now: number): { a: number; b: number } {
    const own = this.holder.localUsage(now);
    const spent =
      ask.meter === 'tokens'
        ? own.tokens
        : ask.meter === 'requests'
          ? own.requests
          : this.holder.ioUsage(now)[ask.meter as 'input' | 'output'];
    const part = ask.limit / n;
    if (ask.kind === 'w') {
      const end = ask.hint > now ? ask.hint : now + ask.lengthMs;
      return { a: end, b: Math.min(part, spent) };
    }
    return { a: now, b: Math.max(0, part - spent) };
  }

  private apply(
    pending: readonly PendingAsk[],
    grants: readonly { grant: number; end: number; room: number }[],
    now: number,
  ): void {
    let any = false;
    const counted = this.attributes;
    pending.forEach((p, i) => {
      const g = grants[i]!;
      p.meter.granted(p, g, now);
      if (g.grant > 0) {
        any = true;
        const before = g.room + g.grant;
        const shrunk = Math.floor(p.ask.share * before) < p.ask.need;
        this.context.counted(counted, shrunk ? 'shrunk' : 'granted');
      }
      if (p.ask.give > 0) this.context.counted(counted, 'returned');
    });
    // Calls waiting in the queue for this lease are tried now rather than at their timer.
    if (any) for (const s of this.states) s.listener?.(s, { type: 'free' });
  }

  /**
   * Put the holder's newest own reading of the upstream into the asks, once per reading: a
   * window's end and count (the store follows the upstream's window), a bucket's level. Returns
   * when the reading's call was sent (0: none handed).
   */
  private withReading(pending: readonly PendingAsk[], now: number): number {
    const reading = this.holder.lastReading();
    if (reading === undefined) return 0;
    const fresh = reading.sentAt > this.readSentAt;
    for (const p of pending) readInto(p.ask, reading, now, fresh, this.holder.upstream);
    return fresh ? reading.sentAt : 0;
  }
}

/** One meter's part of a reading, into its ask. */
function readInto(
  ask: MeterAsk,
  shared: SharedReading,
  now: number,
  fresh: boolean,
  upstream: string,
): void {
  const part = shared.reading[ask.meter as keyof SharedReading['reading']];
  if (ask.kind === 'w') {
    const end = ask.meter === 'tokens' ? shared.tokensEnd : shared.requestsEnd;
    if (!(end > now && end <= now + ask.lengthMs)) return;
    ask.hint = end;
    if (!fresh || part?.remaining === undefined) return;
    if (part.limit !== undefined && part.limit !== ask.limit) return;
    ask.read = Math.max(0, ask.limit - part.remaining);
    return;
  }
  if (!fresh || part?.remaining === undefined) return;
  if (part.limit !== undefined && part.limit !== ask.limit) return;
  const slack = upstream === 'anthropic' && ask.meter !== 'requests' ? ROUNDING : 0;
  const refilled = part.remaining + ((now - shared.sentAt) * ask.limit) / ask.lengthMs;
  ask.read = Math.max(0, Math.min(ask.limit, refilled) - slack);
}

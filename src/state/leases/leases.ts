import { metrics, type Counter } from '@opentelemetry/api';
import type { ModelState } from '../../registry/model-state';
import { METER_NAME, SWITCHBOARD_METRICS } from '../../telemetry/metric-names';
import type { SwitchboardLogger } from '../../types';
import type { RedisClientLike } from '../redis/redis-client';
import { LeaseBook, type LeaseContext } from './lease-book';
import type { LeaseHolder } from './lease-holder';
import type { ResolvedLeaseOptions } from './lease-options';

/** What the leases of a store borrow from it. */
interface LeaseHost {
  /** The client while the store is reachable and not degraded. */
  ready(): RedisClientLike | undefined;
  prefix(): string;
  readonly id: string;
  readonly timeout: number;
  degrade(error: unknown): void;
  skipped(what: string): void;
}

/** How often idle leases are handed back (ms). */
const TEND_MS = 250;
/** A lease unused this long gives back what it holds beyond one call's charge (ms). */
const IDLE_MS = 1_000;
/** A replica counts as present this long after its last lease exchange (ms): a quota minute. */
const PEER_TTL_MS = 60_000;
/** How far ahead of this clock a peer's time may be (ms). */
const SKEW_MS = 5_000;

/**
 * The leases of every limit holder one switchboard's models draw on (one {@link LeaseBook} per
 * ledger, a quota pool's members share one; and one per level of a pool path, `quotaPools`), the mode they are in (from the store, or from this
 * process while the store cannot be reached), what they did (for health and metrics), and the
 * timer that hands back idle leases.
 *
 * @example
 * ```ts
 * const leases = new Leases({ share: 0.05, replicas: undefined }, host);
 * leases.attach([{ states: [state], field: 'east:gpt-4o' }], { clock: Date.now, logger });
 * leases.health(); // { mode: 'store', replicas: 4, exchanges: 120, share: 0.05 }
 * ```
 */
export class Leases {
  private readonly books: LeaseBook[] = [];
  private timer: NodeJS.Timeout | undefined;
  private away = false;
  private peers: number | undefined;
  private exchanges = 0;
  private counter: Counter | undefined;
  private ctx: LeaseContext | undefined;
  private clock: () => number = Date.now;
  private logger: SwitchboardLogger | undefined;

  constructor(
    private readonly options: ResolvedLeaseOptions,
    private readonly host: LeaseHost,
  ) {}

  /**
   * Lease books for these holders (each with the models that draw on it; the first one's ledger
   * unless `holder` says otherwise), and the timer; the switchboard's clock and logger.
   */
  attach(
    holders: readonly { states: readonly ModelState[]; field: string; holder?: LeaseHolder }[],
    switchboard: { clock: () => number; logger: SwitchboardLogger },
  ): void {
    this.clock = switchboard.clock;
    this.logger = switchboard.logger;
    // Taken when the switchboard starts, not at import: a provider registered later counts.
    const counter = metrics
      .getMeterProvider()
      .getMeter(METER_NAME)
      .createCounter(SWITCHBOARD_METRICS.LEASES, {
        description:
          'Leases of quota granted by the shared store, shrunk to one call, or handed back',
      });
    this.counter = counter;
    const context = (this.ctx = this.context());
    for (const { states, field, holder } of holders) {
      const book = new LeaseBook(holder ?? states[0]!.quota, states, field, context);
      this.books.push(book);
      for (const result of ['granted', 'shrunk', 'returned'] as const) {
        counter.add(0, { ...book.attributes, result });
      }
    }
    this.timer = setInterval(() => this.tend(), TEND_MS);
    this.timer.unref();
  }

  /** Take a first lease for every limit, so that the first calls need not wait for one. */
  warm(): void {
    for (const b of this.books) b.warm();
  }

  /** What health shows of the leases. */
  health(): Record<string, unknown> {
    return {
      mode: this.away ? 'local' : 'store',
      replicas: this.replicas(),
      share: this.options.share,
      exchanges: this.exchanges,
    };
  }

  /** @internal Whether any book's exchange with the store is under way (a test waits for it). */
  get exchanging(): boolean {
    return this.books.some((b) => b.exchanging);
  }

  /** Round trips the lease exchanges took so far. */
  get roundTrips(): number {
    return this.exchanges;
  }

  /**
   * Stop the timer. What the leases hold is not handed back: a window's lease ends with its
   * window, and a bucket refills what it lent.
   */
  close(): void {
    clearInterval(this.timer);
  }

  /** The replicas each limit is split among away from the store: configured, else learned. */
  private replicas(): number {
    return this.options.replicas ?? this.peers ?? 1;
  }

  private context(): LeaseContext {
    const host = this.host;
    return {
      client: () => {
        const client = host.ready();
        this.mode(client === undefined);
        return client;
      },
      prefix: () => host.prefix(),
      id: host.id,
      share: this.options.share,
      timeout: host.timeout,
      peerTtlMs: PEER_TTL_MS,
      skewMs: SKEW_MS,
      clock: () => this.clock(),
      replicas: () => this.replicas(),
      degrade: (error) => {
        host.degrade(error);
        this.mode(true);
      },
      skipped: (what) => host.skipped(what),
      exchanged: (peers) => {
        this.exchanges++;
        if (peers !== undefined) this.peers = peers;
      },
      counted: (attributes, result) => this.counter?.add(1, { ...attributes, result }),
    };
  }

  /** Switch between the store's leases and this process's, with one log line each way. */
  private mode(away: boolean): void {
    if (away === this.away) return;
    this.away = away;
    const logger = this.logger;
    if (away) {
      for (const b of this.books) b.goAway();
      logger?.warn(
        `Leases: the shared store cannot be reached; each replica admits within 1/${this.replicas()} of each limit until it is back`,
      );
    } else {
      for (const b of this.books) b.comeBack();
      logger?.log('Leases: the shared store is back; leases come from it again');
    }
  }

  private tend(): void {
    const now = this.clock();
    // Reading the client notices an outage (or its end) even while no call asks.
    this.ctx?.client();
    for (const b of this.books) b.tend(now - IDLE_MS, now);
  }
}

import { tokensOf, type Admission } from './admission';
import type { Anchoring } from './limit-counter';
import type { HeaderSource, RateLimitReading } from './rate-limit-headers';
import type { SharedReading } from './reading';

/**
 * The last reading of an answer to this instance's own calls: a {@link SharedReading} before the
 * ledger adds when its windows end.
 */
type LastOwn = Pick<SharedReading, 'sentAt' | 'at' | 'tokens' | 'reading'>;

/** How often (answers) the `*-limit` headers are read again once every limit is known. */
const LIMIT_RECHECK = 64;

/**
 * What a ledger remembers of the answers it anchored on, apart from its counters: how often to
 * read the limit headers, the newest send time anchored on (an older reading says nothing new),
 * the call whose own answer was anchored on (its refund would count it out twice), the last own
 * reading (for other instances) and when a call without an output cap last went out. It turns
 * each answer into the {@link Anchoring} its counters take.
 *
 * @example
 * ```ts
 * const reading = log.read(response.headers);
 * if (reading) for (const c of counters) c.anchor(reading, log.ownAnswer(reading, call, sentAt, now));
 * ```
 */
export class AnswerLog {
  /** Answers until the `*-limit` headers are read again. */
  private limitCheck = 0;
  /** The call whose answer's headers were anchored on last, until it is answered. */
  private anchoredOwn: Admission | undefined;
  /** The latest send time of a call whose answer was anchored on (ours or another's). */
  private anchoredSentAt = 0;
  private own: LastOwn | undefined;
  /** What the counters take of our own answers, written again for each ({@link ownAnswer}). */
  private readonly anchoring: Anchoring = {
    now: 0,
    sentAt: 0,
    own: undefined,
    peer: undefined,
    paceOk: false,
    headers: undefined,
  };
  /**
   * When a call without an output cap was last admitted: the upstream reserves output for it
   * that we do not charge, so a difference in its count says nothing of others' pace for a while.
   */
  private uncappedAt = -Infinity;
  /**
   * Calls without an output cap admitted and not yet answered, each knowing its place here
   * (`Admission.slot`): a call joins and leaves in a few steps, where a `Set` hashed and resized
   * its table on every call (0.15-0.35 µs).
   */
  private readonly inFlight: Admission[] = [];

  /**
   * What {@link read} reads every answer into: the last own reading is this one, and the next
   * answer's is written over it (see `readRateLimits`), instead of three objects made per answer.
   */
  private readonly reading: RateLimitReading = {};

  constructor(
    /**
     * The upstream's header reader (its rules' `read`): the `*-limit` headers too when asked,
     * written into `into` when given.
     */
    private readonly reader: (
      headers: HeaderSource,
      withLimits: boolean,
      into?: RateLimitReading,
    ) => RateLimitReading | undefined,
    /** Its ledger's scope: corrections fade over its `span`. */
    private readonly scope: { readonly span: number },
  ) {}

  /** The last reading of an answer to this instance's own calls. */
  get last(): LastOwn | undefined {
    return this.own;
  }

  /** A call was admitted at `now`, priced: an uncapped one's output is the reservation by then. */
  admitted(admission: Admission, now: number): void {
    if (admission.uncapped !== undefined) {
      this.uncappedAt = now;
      if (this.placeOf(admission) < 0) {
        admission.slot = this.inFlight.length;
        this.inFlight.push(admission);
      }
    } else if (admission.output === 0) this.uncappedAt = now;
  }

  /** The uncapped calls admitted and not yet answered. */
  get uncapped(): readonly Admission[] {
    return this.inFlight;
  }

  /** A call was answered (or failed): true when its own answer's headers were anchored on. */
  answered(admission: Admission): boolean {
    if (admission.uncapped !== undefined) this.leave(admission);
    const anchored = this.anchoredOwn === admission;
    if (anchored) this.anchoredOwn = undefined;
    return anchored;
  }

  /** Where `admission` is in {@link inFlight}, or -1. */
  private placeOf(admission: Admission): number {
    const slot = admission.slot ?? -1;
    if (slot >= 0 && this.inFlight[slot] === admission) return slot;
    // A slot of another ledger's, or copied with the admission it was made from: look here too.
    return slot >= 0 ? this.inFlight.indexOf(admission) : -1;
  }

  /** Takes `admission` out of {@link inFlight}: the last one takes its place. */
  private leave(admission: Admission): void {
    const i = this.placeOf(admission);
    if (i < 0) return;
    const last = this.inFlight.pop()!;
    if (last !== admission) {
      this.inFlight[i] = last;
      last.slot = i;
    }
    admission.slot = undefined;
  }

  /** Parse a refusal's rate-limit headers, without their `*-limit` ones. */
  peek(headers: HeaderSource): RateLimitReading | undefined {
    return this.reader(headers, false);
  }

  /**
   * Parse an answer's rate-limit headers, its `*-limit` ones once in a while, or whenever `doubt`
   * says a limit in force waits to be confirmed.
   */
  read(headers: HeaderSource, doubt = false): RateLimitReading | undefined {
    const withLimits = doubt || this.limitCheck <= 0;
    const reading = this.reader(headers, withLimits, this.reading);
    if (reading === undefined) return undefined;
    if (withLimits) this.limitCheck = LIMIT_RECHECK;
    else this.limitCheck--;
    return reading;
  }

  /**
   * Our own answer to `own` (sent at `sentAt`), read at `now`: what its counters take, with the
   * answer's `headers` where they may read more of them. Every answer with rate-limit headers
   * comes here, so the anchoring and the last reading are this log's two objects, written again
   * for each: the counters read the anchoring at once and keep none of it, and the last reading
   * is copied for other instances ({@link last}). Made for each answer, they were 100 bytes.
   */
  ownAnswer(
    reading: RateLimitReading,
    own: Admission | undefined,
    sentAt: number | undefined,
    now: number,
    headers?: HeaderSource,
  ): Anchoring {
    if (own !== undefined) this.anchoredOwn = own;
    // The upstream wrote the header when the call reached it: on our clock, about when we sent it.
    const sent = sentAt !== undefined && sentAt <= now ? sentAt : now;
    const tokens = own !== undefined ? tokensOf(own) : 0;
    const last = (this.own ??= { sentAt: sent, at: now, tokens, reading });
    last.sentAt = sent;
    last.at = now;
    last.tokens = tokens;
    last.reading = reading;
    if (sent > this.anchoredSentAt) this.anchoredSentAt = sent;
    const context = this.anchoring;
    context.now = now;
    context.sentAt = sent;
    context.own = own;
    context.paceOk = now - this.uncappedAt > this.scope.span;
    context.headers = headers;
    return context;
  }

  /** True when a call sent at `sentAt` is newer than every one whose answer was anchored on. */
  isNewer(sentAt: number): boolean {
    return sentAt > this.anchoredSentAt;
  }

  /**
   * Another instance's answer, at `now`: what the counters take, or `undefined` when it is not
   * newer than every answer anchored on, or sent ahead of our clock (the other machine's runs
   * ahead: it waits until ours gets there).
   */
  peerAnswer(reading: SharedReading, now: number): Anchoring | undefined {
    if (!this.isNewer(reading.sentAt) || reading.sentAt > now) return undefined;
    this.anchoredSentAt = reading.sentAt;
    return { now, sentAt: reading.sentAt, own: undefined, peer: reading, paceOk: false };
  }
}

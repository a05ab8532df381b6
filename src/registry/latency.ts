/**
 * Time constant (ms) of the latency estimates: an estimate fades by a factor e over this long
 * without answers, and a new answer weighs `1 - e^(-elapsed / decay)` against the old estimate.
 */
export const DEFAULT_LATENCY_DECAY = 10_000;

/**
 * What {@link LatencyTracker.snapshot} reports: the current estimates, in ms, each present once
 * measured.
 *
 * @example
 * ```ts
 * const seen: LatencySnapshot = { firstTokenMs: 420, perTokenMs: 18.5 };
 * ```
 */
export interface LatencySnapshot {
  /** Time to the first event of a stream. */
  firstTokenMs?: number;
  /** Time of a whole answer divided by its output tokens (answers that are not streamed). */
  perTokenMs?: number;
}

/**
 * A model's recent latency on one deployment, read-only: what a status page or a selector reads.
 *
 * @example
 * ```ts
 * const latency = deployment.models.get('gpt-4o')!.latencyView;
 * latency.snapshot(); // { firstTokenMs: 420, perTokenMs: 18.5 }, each once measured
 * ```
 */
export interface LatencyView {
  /** Time to first token (ms) of recent streams, `undefined` before the first. */
  readonly firstTokenMs: number | undefined;
  /** Time per output token (ms) of recent answers that were not streamed, `undefined` before the first. */
  readonly perTokenMs: number | undefined;
  /** Both estimates, each present once measured. */
  snapshot(): LatencySnapshot;
}

/**
 * A peak-sensitive moving average that forgets with time (Finagle's peak EWMA): the estimate
 * fades toward 0 by `e^(-idle / decay)` while no sample renews it, so a deployment left alone
 * looks faster and faster until it is tried again; a sample above the faded estimate replaces it
 * at once, one below pulls it down by `1 - e^(-idle / decay)`.
 */
class PeakEwma {
  private value = 0;
  private at = 0;
  private seen = false;

  observe(sample: number, now: number, decay: number): void {
    const idle = now > this.at ? now - this.at : 0;
    // Answers within one ms of each other (most, under load) need no fading.
    const w = idle === 0 ? 1 : Math.exp(-idle / decay);
    const faded = this.value * w;
    this.value = !this.seen || sample >= faded ? sample : faded * w + sample * (1 - w);
    this.seen = true;
    this.at = now;
  }

  read(now: number, decay: number): number | undefined {
    if (!this.seen) return undefined;
    const idle = now - this.at;
    return idle > 0 ? this.value * Math.exp(-idle / decay) : this.value;
  }
}

/**
 * Recent latency of one model on one deployment, normalised for answer length: the time to the
 * first token of streams, and the time per output token of answers that are not streamed, kept
 * apart since they measure different things. Each is a {@link PeakEwma}-style estimate on an
 * injected clock: a slow answer shows at once, fast answers bring it down over `decay` ms, and an
 * estimate not renewed fades, so a deployment that recovered while it was avoided is tried again.
 *
 * @example
 * ```ts
 * const latency = new LatencyTracker(Date.now);
 * const sent = latency.now();
 * // ... the answer came, with 120 output tokens
 * latency.answered(sent, 120);
 * latency.perTokenMs; // ms per output token, recent
 * ```
 */
export class LatencyTracker implements LatencyView {
  private readonly firstToken = new PeakEwma();
  private readonly perToken = new PeakEwma();

  constructor(
    /** Epoch ms. */
    readonly now: () => number = Date.now,
    /** See {@link DEFAULT_LATENCY_DECAY}. */
    readonly decay: number = DEFAULT_LATENCY_DECAY,
  ) {}

  /** A stream sent at `sentAt` (epoch ms) delivered its first event now. */
  firstEvent(sentAt: number): void {
    const now = this.now();
    this.firstToken.observe(Math.max(0, now - sentAt), now, this.decay);
  }

  /**
   * An answer (not streamed) sent at `sentAt` came whole at `now` (the clock's reading by
   * default), with `outputTokens` tokens.
   */
  answered(sentAt: number, outputTokens: number | undefined, now: number = this.now()): void {
    const tokens = outputTokens !== undefined && outputTokens >= 1 ? outputTokens : 1;
    this.perToken.observe(Math.max(0, now - sentAt) / tokens, now, this.decay);
  }

  /** Time to first token (ms) of recent streams, `undefined` before the first. */
  get firstTokenMs(): number | undefined {
    return this.firstToken.read(this.now(), this.decay);
  }

  /** Time per output token (ms) of recent answers that were not streamed, `undefined` before the first. */
  get perTokenMs(): number | undefined {
    return this.perToken.read(this.now(), this.decay);
  }

  /**
   * This estimate and `other`'s, of the same kind: time to first token when both have one, else
   * time per output token when both have one, else `undefined` (nothing to compare yet).
   *
   * @example
   * ```ts
   * const pair = east.latency.against(west.latency);
   * if (pair) console.log(`east ${pair[0]} ms, west ${pair[1]} ms`);
   * ```
   */
  against(other: LatencyTracker): [number, number] | undefined {
    const now = this.now();
    const a = this.firstToken.read(now, this.decay);
    const b = other.firstToken.read(now, other.decay);
    if (a !== undefined && b !== undefined) return [a, b];
    const c = this.perToken.read(now, this.decay);
    const d = other.perToken.read(now, other.decay);
    return c !== undefined && d !== undefined ? [c, d] : undefined;
  }

  /** The estimates measured so far, rounded to 0.1 ms. */
  snapshot(): LatencySnapshot {
    const out: LatencySnapshot = {};
    const first = this.firstTokenMs;
    const per = this.perTokenMs;
    if (first !== undefined) out.firstTokenMs = Math.round(first * 10) / 10;
    if (per !== undefined) out.perTokenMs = Math.round(per * 10) / 10;
    return out;
  }
}

/**
 * Section 12: the response cache. What a hit served from memory costs a caller, from the call
 * to the answer in hand (readCall, the lookup, a fresh copy of the answer, the SDK's promise),
 * round by round with the load average beside each, and the heap it allocates per hit (a count
 * the machine's other work does not blur); beside it the same call on a switchboard without a
 * cache, answered by a simulated deployment in process.
 */
import { loadavg } from 'node:os';
import { createSwitchboard, type Switchboard } from '../src';
import { SimulatedUpstream } from '../src/testing';
import { quantile } from './util';

const MODEL = 'gpt-4o-mini';
/** Hits per heap reading: their garbage (a few KB each) stays well below one young-space fill. */
const HEAP_BATCH = 100;

/** One round's hits: µs at the median, 99th and 99.9th percentile; the 1-min load at its end. */
export interface CacheRound {
  p50: number;
  p99: number;
  p999: number;
  load: number;
}

export interface CacheFigures {
  calls: number;
  rounds: CacheRound[];
  /** µs per hit over every round: median, 99th and 99.9th percentile. */
  hitUs: { p50: number; p99: number; p999: number };
  /** CPU µs per hit (getrusage, its own cost included): median and 99th percentile. */
  hitCpuUs: { p50: number; p99: number };
  /**
   * Heap bytes allocated per hit: the median over batches of {@link HEAP_BATCH} hits of the heap
   * grown across the batch, each after a full GC (`undefined` without `--expose-gc`).
   */
  bytesPerHit: number | undefined;
  /**
   * µs per `JSON.parse` of the answer's text (p50), measured in the same run: how fast this
   * machine is right now (on an idle 2020s core, well under 1 µs).
   */
  parseUs: number;
  /** µs per call of the same body, cache off, answered by the upstream (for scale). */
  upstreamUs: { p50: number; p99: number };
}

async function timed(sb: Switchboard, body: object, calls: number): Promise<number[]> {
  const out = new Array<number>(calls);
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await sb.chat.completions.create(body as never);
    out[i] = (performance.now() - t) * 1000;
  }
  return out;
}

/**
 * The CPU time (user + system, µs) this process spent on each call: on a shared machine the
 * wall time of a few µs also holds the time other processes had the core.
 */
async function cpuTimed(sb: Switchboard, body: object, calls: number): Promise<number[]> {
  const out = new Array<number>(calls);
  for (let i = 0; i < calls; i++) {
    const t = process.cpuUsage();
    await sb.chat.completions.create(body as never);
    const d = process.cpuUsage(t);
    out[i] = d.user + d.system;
  }
  return out;
}

/** Heap bytes per hit, or `undefined` when the process was not started with `--expose-gc`. */
async function heapPerHit(
  sb: Switchboard,
  body: object,
  batches: number,
): Promise<number | undefined> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) return undefined;
  const per: number[] = [];
  for (let b = 0; b < batches; b++) {
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < HEAP_BATCH; i++) await sb.chat.completions.create(body as never);
    per.push((process.memoryUsage().heapUsed - before) / HEAP_BATCH);
  }
  return Math.round(quantile(per, 0.5));
}

/**
 * `calls` hits per round, `rounds` rounds, after a warm-up; the answer is a typical short chat
 * completion (a 40-word prompt, about 1 KB of JSON).
 *
 * @example
 * ```ts
 * const figures = await cacheBench({ calls: 20_000, rounds: 5 });
 * ```
 */
export async function cacheBench(options: {
  calls: number;
  rounds: number;
}): Promise<CacheFigures> {
  const upstream = await SimulatedUpstream.start({ deployments: [{ name: 'oai0', latency: 0 }] });
  const deployments = [
    {
      provider: 'openai' as const,
      name: 'oai0',
      baseURL: upstream.deployment('oai0').openaiBaseURL,
      apiKey: 'k',
      models: [{ name: MODEL }],
    },
  ];
  const cached = createSwitchboard({ deployments, cache: { ttl: 3_600_000 } });
  const plain = createSwitchboard({ deployments });
  const words = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
  const body = { model: MODEL, messages: [{ role: 'user', content: words }], tenant: 'acme' };
  try {
    await cached.chat.completions.create(body as never);
    await timed(cached, body, Math.min(options.calls, 5_000));
    const all: number[] = [];
    const rounds: CacheRound[] = [];
    for (let r = 0; r < options.rounds; r++) {
      const round = await timed(cached, body, options.calls);
      rounds.push({
        p50: round1(quantile(round, 0.5)),
        p99: round1(quantile(round, 0.99)),
        p999: round1(quantile(round, 0.999)),
        load: round2(loadavg()[0]!),
      });
      all.push(...round);
      const { p50, p99, p999, load } = rounds[r]!;
      console.log(
        `round ${r + 1}, ${round.length} hits: p50 ${p50} µs, p99 ${p99} µs, p99.9 ${p999} µs (load average ${load})`,
      );
    }
    const batches = Math.max(10, Math.min(200, Math.floor(options.calls / HEAP_BATCH)));
    const bytesPerHit = await heapPerHit(cached, body, batches);
    const cpu = await cpuTimed(cached, body, options.calls);
    const text = JSON.stringify(await cached.chat.completions.create(body as never));
    const parses = new Array<number>(options.calls);
    for (let i = 0; i < options.calls; i++) {
      const t = performance.now();
      JSON.parse(text);
      parses[i] = (performance.now() - t) * 1000;
    }
    const upstreamCalls = await timed(plain, body, Math.min(options.calls, 2_000));
    const figures: CacheFigures = {
      calls: all.length,
      rounds,
      hitUs: {
        p50: round1(quantile(all, 0.5)),
        p99: round1(quantile(all, 0.99)),
        p999: round1(quantile(all, 0.999)),
      },
      bytesPerHit,
      parseUs: round1(quantile(parses, 0.5)),
      hitCpuUs: { p50: round1(quantile(cpu, 0.5)), p99: round1(quantile(cpu, 0.99)) },
      upstreamUs: {
        p50: round1(quantile(upstreamCalls, 0.5)),
        p99: round1(quantile(upstreamCalls, 0.99)),
      },
    };
    console.log(
      `hit from memory, ${figures.calls} calls in ${options.rounds} rounds: p50 ${figures.hitUs.p50} µs, ` +
        `p99 ${figures.hitUs.p99} µs (rounds: ${rounds.map((r) => r.p99).join(', ')}), p99.9 ${figures.hitUs.p999} µs`,
    );
    console.log(
      bytesPerHit === undefined
        ? 'heap allocated per hit: not measured (run with node --expose-gc, as npm run bench does)'
        : `heap allocated per hit: ${bytesPerHit} bytes (median of batches of ${HEAP_BATCH} hits, each after a full GC)`,
    );
    console.log(
      `CPU time per hit, ${cpu.length} calls: p50 ${figures.hitCpuUs.p50} µs, p99 ${figures.hitCpuUs.p99} µs`,
    );
    console.log(
      `for scale, JSON.parse of the answer (${text.length} characters) on this machine now: p50 ${figures.parseUs} µs`,
    );
    console.log(
      `the same call without a cache, simulated deployment in process: p50 ${figures.upstreamUs.p50} µs, p99 ${figures.upstreamUs.p99} µs`,
    );
    return figures;
  } finally {
    await cached.close();
    await plain.close();
    await upstream.close();
  }
}

const round1 = (x: number): number => Math.round(x * 10) / 10;
const round2 = (x: number): number => Math.round(x * 100) / 100;

/**
 * `--soak <seconds>`: steady mixed traffic (chat + messages, streamed or not, some sessions, some
 * caller aborts) against simulated deployments that keep failing in every way they can (429s,
 * 500s, 503s, resets, mid-stream drops, hangs), with a report every few seconds and a verdict on
 * heap growth at the end.
 */
import type { SimulatedFault } from '../src/testing';
import { createSwitchboard, type DeploymentConfig, type Switchboard } from '../src';
import { startUpstreams, type Upstreams } from './upstreams';
import { fixed, gc, hasGc, median, quietLogger, seeded, sleep } from './util';

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-sonnet-5';
const TIME_SCALE = 10;

export interface SoakOptions {
  seconds: number;
  every: number;
  rate: number;
  seed: number;
  inproc: boolean;
  /** Where to print (default stdout). */
  print?: (line: string) => void;
}

export interface SoakSample {
  t: number;
  heapUsedMB: number;
  rssMB: number;
  inFlight: number;
  completed: number;
  ok: number;
  errors: Record<string, number>;
  upstream429: number;
  upstreamRequests: number;
}

export interface SoakResult {
  seconds: number;
  rate: number;
  samples: SoakSample[];
  completed: number;
  ok: number;
  errors: Record<string, number>;
  callerAborts: number;
  upstream429: number;
  injectedFaults: Record<string, number>;
  heap: {
    baselineMB: number;
    endMB: number;
    growthMB: number;
    growthPct: number;
    slopeMBPerMin: number;
  };
  inFlightAfterDrain: number;
  verdict: string;
  stable: boolean;
}

const FAULTS: Array<[number, SimulatedFault, number]> = [
  // weight, fault, times
  [4, { kind: 'status', status: 429, retryAfterMs: 300 }, 2],
  [3, { kind: 'status', status: 500 }, 3],
  [2, { kind: 'status', status: 503 }, 1],
  [3, { kind: 'reset' }, 1],
  [3, { kind: 'drop-mid-stream', afterEvents: 2 }, 2],
  [1, { kind: 'hang' }, 1],
];

function faultLabel(f: SimulatedFault): string {
  return f.kind === 'status' ? String(f.status) : f.kind;
}

export async function soak(options: SoakOptions): Promise<SoakResult> {
  const print = options.print ?? ((line: string) => console.log(line));
  const rng = seeded(options.seed);
  const names = [
    'soak-oai0',
    'soak-oai1',
    'soak-oai2',
    'soak-oai3',
    'soak-claude0',
    'soak-claude1',
  ];
  const upstreams: Upstreams = await startUpstreams(
    names.map((name) => ({
      name,
      latency: 15,
      chunkDelay: 2,
      timeScale: TIME_SCALE,
      ...(name.includes('claude') ? { tpm: 60_000, rpm: 480 } : { tpm: 60_000, rpm: 600 }),
    })),
    options.inproc,
  );
  const deployments: DeploymentConfig[] = upstreams.endpoints.map((e) =>
    e.name.includes('claude')
      ? {
          provider: 'anthropic',
          name: e.name,
          baseURL: e.anthropicBaseURL,
          apiKey: 'soak',
          timeout: 2000,
          models: [{ name: CLAUDE, tpm: 60_000, rpm: 480, cooldown: 10_000 / TIME_SCALE }],
        }
      : {
          provider: 'openai',
          name: e.name,
          baseURL: e.openaiBaseURL,
          apiKey: 'soak',
          timeout: 2000,
          models: [{ name: GPT, tpm: 60_000, rpm: 600, cooldown: 10_000 / TIME_SCALE }],
        },
  );
  const logger = quietLogger();
  const sb: Switchboard = createSwitchboard({
    deployments,
    ratelimitWindow: 60_000 / TIME_SCALE,
    logger,
  });

  let inFlight = 0;
  let completed = 0;
  let ok = 0;
  let callerAborts = 0;
  let skipped = 0;
  const errors: Record<string, number> = {};
  const injected: Record<string, number> = {};
  const samples: SoakSample[] = [];

  const one = async (): Promise<void> => {
    const chat = rng() < 0.5;
    const stream = rng() < 0.3;
    const breakEarly = stream && rng() < 0.1;
    const session = rng() < 0.25 ? { session_id: `s${Math.floor(rng() * 3000)}` } : {};
    const abort = rng() < 0.03 ? AbortSignal.timeout(Math.floor(rng() * 40)) : undefined;
    const content = 'x'.repeat(20 + Math.floor(rng() * 400)) + ' tell me a fact about soaking';
    const requestOptions = abort ? { signal: abort } : undefined;
    try {
      if (chat) {
        const params = { model: GPT, messages: [{ role: 'user' as const, content }], ...session };
        if (stream) {
          const s = await sb.chat.completions.create({ ...params, stream: true }, requestOptions);
          for await (const _chunk of s) if (breakEarly) break;
        } else {
          await sb.chat.completions.create(params, requestOptions);
        }
      } else {
        const params = {
          model: CLAUDE,
          max_tokens: 256,
          messages: [{ role: 'user' as const, content }],
          ...session,
        };
        if (stream) {
          const s = await sb.messages.create({ ...params, stream: true }, requestOptions);
          for await (const _event of s) if (breakEarly) break;
        } else {
          await sb.messages.create(params, requestOptions);
        }
      }
      ok++;
    } catch (error) {
      const name = error instanceof Error ? error.constructor.name : typeof error;
      if (abort?.aborted && name === 'APIUserAbortError') callerAborts++;
      else errors[name] = (errors[name] ?? 0) + 1;
    }
  };

  const launch = (): void => {
    inFlight++;
    void one().finally(() => {
      inFlight--;
      completed++;
    });
  };

  const totalWeight = FAULTS.reduce((a, [w]) => a + w, 0);
  const injectFault = async (): Promise<void> => {
    let pick = rng() * totalWeight;
    let entry = FAULTS[0]!;
    for (const f of FAULTS) {
      pick -= f[0];
      if (pick < 0) {
        entry = f;
        break;
      }
    }
    const name = names[Math.floor(rng() * names.length)]!;
    injected[faultLabel(entry[1])] = (injected[faultLabel(entry[1])] ?? 0) + entry[2];
    await upstreams.fail(name, entry[1], entry[2]);
  };

  const upstreamTotals = async (): Promise<{ r429: number; requests: number }> => {
    const stats = await upstreams.stats();
    let r429 = 0;
    let requests = 0;
    for (const s of Object.values(stats)) {
      r429 += s.byStatus[429] ?? 0;
      requests += s.requests;
    }
    return { r429, requests };
  };

  const sample = async (t: number): Promise<SoakSample> => {
    gc();
    const mem = process.memoryUsage();
    const up = await upstreamTotals();
    const s: SoakSample = {
      t,
      heapUsedMB: mem.heapUsed / 2 ** 20,
      rssMB: mem.rss / 2 ** 20,
      inFlight,
      completed,
      ok,
      errors: { ...errors },
      upstream429: up.r429,
      upstreamRequests: up.requests,
    };
    samples.push(s);
    return s;
  };

  print(
    `Soak: ${options.seconds} s at ${options.rate} calls/s over ${names.length} simulated deployments ` +
      `(4 chat, 2 messages; 30 % streamed, 25 % with sessions, 3 % caller aborts, a fault injected every second)` +
      (hasGc() ? '' : '\n(no --expose-gc: heap figures include garbage)'),
  );
  print(
    't (s) | heap MB |  rss MB | in flight | completed |     ok | errors by class | upstream 429',
  );

  const start = performance.now();
  const end = start + options.seconds * 1000;
  let nextReport = start + options.every * 1000;
  let nextFault = start + 1000;
  let credit = 0;
  let last = start;
  const maxInFlight = Math.max(100, options.rate * 4);
  while (performance.now() < end) {
    await sleep(10);
    const now = performance.now();
    credit += ((now - last) / 1000) * options.rate;
    last = now;
    while (credit >= 1) {
      credit--;
      if (inFlight >= maxInFlight) skipped++;
      else launch();
    }
    if (now >= nextFault) {
      nextFault += 1000;
      await injectFault();
    }
    if (now >= nextReport) {
      nextReport += options.every * 1000;
      const s = await sample((now - start) / 1000);
      print(formatSample(s));
    }
  }

  // Drain: no new calls; hangs end at the 2 s deadline.
  const drainUntil = performance.now() + 10_000;
  while (inFlight > 0 && performance.now() < drainUntil) await sleep(20);
  const final = await sample((performance.now() - start) / 1000);
  print(formatSample(final) + '  (after drain)');
  await sb.close();
  await upstreams.close();

  // Heap verdict: skip the first fifth (warm-up: JIT, connection pools, session LRU filling).
  const steady = samples.filter((s) => s.t >= options.seconds * 0.2);
  const third = Math.max(1, Math.floor(steady.length / 3));
  const baseline = median(steady.slice(0, third).map((s) => s.heapUsedMB));
  const endHeap = median(steady.slice(-third).map((s) => s.heapUsedMB));
  const slope = slopePerMinute(steady.map((s) => [s.t, s.heapUsedMB]));
  const growthMB = endHeap - baseline;
  const growthPct = growthMB / baseline;
  const stable = steady.length < 3 ? growthMB < 5 : growthMB <= 5 && growthPct <= 0.1;
  const verdict =
    `${stable ? 'heap stable' : 'HEAP GROWING'}: ${fixed(baseline, 1)} MB -> ${fixed(endHeap, 1)} MB ` +
    `(${growthMB >= 0 ? '+' : ''}${fixed(growthMB, 2)} MB, ${growthPct >= 0 ? '+' : ''}${fixed(growthPct * 100, 1)} %, ` +
    `slope ${slope >= 0 ? '+' : ''}${fixed(slope, 3)} MB/min) over ${fixed(final.t, 0)} s; ` +
    `${final.inFlight} in flight after drain; ${completed} calls, ${ok} ok, ` +
    `${Object.values(errors).reduce((a, b) => a + b, 0)} caller-visible errors, ${callerAborts} caller aborts` +
    (skipped ? `, ${skipped} skipped (in-flight cap)` : '');
  print(
    '\nInjected faults (requests affected): ' +
      Object.entries(injected)
        .map(([k, v]) => `${k} ${v}`)
        .join(', '),
  );
  print(`Verdict: ${verdict}`);
  return {
    seconds: options.seconds,
    rate: options.rate,
    samples,
    completed,
    ok,
    errors,
    callerAborts,
    upstream429: final.upstream429,
    injectedFaults: injected,
    heap: { baselineMB: baseline, endMB: endHeap, growthMB, growthPct, slopeMBPerMin: slope },
    inFlightAfterDrain: final.inFlight,
    verdict,
    stable,
  };
}

function formatSample(s: SoakSample): string {
  const errs =
    Object.entries(s.errors)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'none';
  return [
    fixed(s.t, 0).padStart(5),
    fixed(s.heapUsedMB, 1).padStart(7),
    fixed(s.rssMB, 1).padStart(6),
    String(s.inFlight).padStart(9),
    String(s.completed).padStart(9),
    String(s.ok).padStart(6),
    errs,
    String(s.upstream429),
  ].join(' | ');
}

function slopePerMinute(points: Array<[number, number]>): number {
  if (points.length < 2) return 0;
  const mx = points.reduce((a, [x]) => a + x, 0) / points.length;
  const my = points.reduce((a, [, y]) => a + y, 0) / points.length;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : (num / den) * 60;
}

/**
 * Section 8: latency-aware two random choices beside utilization alone.
 *
 * 9a. One slow region: three simulated deployments without quotas, one answering `slowMs` later
 * than the others; calls arrive at a steady rate (open loop). Per strategy, alternating in one
 * process, a fresh switchboard per round: the callers' mean and p95 time, and the share the slow
 * one took.
 *
 * 9b. All equally fast, under Azure-like quotas (section 4's scenario): the 429s and how evenly
 * the deployments are used must not change when latency is weighed too.
 *
 * 9c. The same question on a fake clock, without sockets, so that a busy machine cannot blur it:
 * six equally fast deployments at 95 % of their RPM, answers taking 20 ms times a log-normal
 * noise; how far apart their utilizations drift, and how many calls find no room.
 */
import { createSwitchboard, TwoRandomChoices } from '../src';
import type { ModelState } from '../src/extend';
import { SimulatedUpstream } from '../src/testing';
import {
  DEFAULT_SETUP,
  capacity,
  promptSizes,
  quotaUpstreams,
  scenario,
  type QuotaSetup,
  type ScenarioResult,
} from './strategies';
import { fixed, mean, pct, quantile, quietLogger, seeded, sleep, stddev, table } from './util';

const MODEL = 'gpt-4o-mini';
const MODES = ['utilization', 'latency'] as const;
type Mode = (typeof MODES)[number];

const selectorFor = (mode: Mode, seed: number) =>
  new TwoRandomChoices({ latency: mode === 'latency', random: seeded(seed) });

export interface LatencyBenchOptions {
  /** Seconds of each 9a round per strategy. */
  seconds: number;
  /** Alternating 9a rounds per strategy. */
  rounds: number;
  /** Calls per second of 9a. */
  rate: number;
  /** Latency of the fast deployments, and how much later the slow one answers (ms). */
  fastMs: number;
  slowMs: number;
  /** Seconds of each 9b scenario; 0 skips 9b. */
  quotaSeconds: number;
  loads: readonly number[];
  seed: number;
  inproc: boolean;
}

interface SlowRow {
  mode: Mode;
  calls: number;
  failed: number;
  meanMs: number;
  p50Ms: number;
  p95Ms: number;
  toSlow: number;
}

export async function latencyBench(o: LatencyBenchOptions): Promise<Record<string, unknown>> {
  const slow = await oneSlow(o);
  const even = o.quotaSeconds > 0 ? await equallyFast(o) : undefined;
  const synthetic = o.quotaSeconds > 0 ? onFakeClock() : undefined;
  return { oneSlow: slow, equallyFast: even, synthetic };
}

/** 9a: one deployment `slowMs` slower. */
async function oneSlow(o: LatencyBenchOptions): Promise<SlowRow[]> {
  console.log(
    `-- 9a. One slow deployment: fast0, fast1 answer in ${o.fastMs} ms, slow in ${o.fastMs + o.slowMs} ms; ` +
      `${o.rate} calls/s for ${o.seconds} s per round, ${o.rounds} alternating rounds each, no quotas --\n`,
  );
  const upstream = await SimulatedUpstream.start({
    deployments: [
      { name: 'fast0', latency: o.fastMs, completionTokens: 30 },
      { name: 'fast1', latency: o.fastMs, completionTokens: 30 },
      { name: 'slow', latency: o.fastMs + o.slowMs, completionTokens: 30 },
    ],
  });
  const times: Record<Mode, number[]> = { utilization: [], latency: [] };
  const rows: Record<Mode, { calls: number; failed: number; toSlow: number }> = {
    utilization: { calls: 0, failed: 0, toSlow: 0 },
    latency: { calls: 0, failed: 0, toSlow: 0 },
  };
  try {
    for (let round = 0; round < o.rounds; round++) {
      const order = round % 2 === 0 ? MODES : ([...MODES].reverse() as Mode[]);
      for (const mode of order) {
        upstream.reset();
        const sb = createSwitchboard({
          deployments: upstream.deployments.map((d) => ({
            provider: 'openai' as const,
            name: d.name,
            baseURL: d.openaiBaseURL,
            apiKey: 'k',
            models: [{ name: MODEL }],
          })),
          selector: selectorFor(mode, o.seed + round),
          logger: quietLogger(),
        });
        const r = await openLoop(o.rate, o.seconds, () =>
          sb.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }),
        );
        await sb.close();
        times[mode].push(...r.times);
        rows[mode].calls += r.times.length + r.failed;
        rows[mode].failed += r.failed;
        rows[mode].toSlow += upstream.deployment('slow').stats.requests;
      }
    }
  } finally {
    await upstream.close();
  }
  const out: SlowRow[] = MODES.map((mode) => ({
    mode,
    calls: rows[mode].calls,
    failed: rows[mode].failed,
    meanMs: mean(times[mode]),
    p50Ms: quantile(times[mode], 0.5),
    p95Ms: quantile(times[mode], 0.95),
    toSlow: rows[mode].toSlow / Math.max(1, rows[mode].calls),
  }));
  console.log(
    table(
      ['selector', 'calls', 'failed', 'mean', 'p50', 'p95', 'to the slow one'],
      out.map((r) => [
        r.mode === 'latency' ? 'latency: true' : 'utilization only',
        String(r.calls),
        String(r.failed),
        `${fixed(r.meanMs, 1)} ms`,
        `${fixed(r.p50Ms, 1)} ms`,
        `${fixed(r.p95Ms, 1)} ms`,
        pct(r.toSlow),
      ]),
    ),
  );
  return out;
}

/** Calls started at `rate` per second for `seconds` (open loop); each one's time in ms. */
async function openLoop(
  rate: number,
  seconds: number,
  call: () => Promise<unknown>,
): Promise<{ times: number[]; failed: number }> {
  const times: number[] = [];
  let failed = 0;
  const pending: Promise<void>[] = [];
  const start = performance.now();
  let started = 0;
  while (performance.now() - start < seconds * 1000) {
    const due = Math.floor(((performance.now() - start) / 1000) * rate);
    for (; started < due; started++) {
      const t0 = performance.now();
      pending.push(
        call().then(
          () => void times.push(performance.now() - t0),
          () => void failed++,
        ),
      );
    }
    await sleep(2);
  }
  await Promise.all(pending);
  return { times, failed };
}

interface EvenRow {
  mode: Mode;
  load: number;
  r: ScenarioResult;
  /** Coefficient of variation of the answers per deployment. */
  spread: number;
}

/** 9b: section 4's quota scenario, every deployment equally fast. */
async function equallyFast(o: LatencyBenchOptions): Promise<EvenRow[]> {
  const setup: QuotaSetup = { ...DEFAULT_SETUP };
  const sizes = promptSizes(20_000, o.seed);
  const meanTokens = mean(sizes.map((c) => Math.max(1, Math.ceil(c / 4)))) + setup.completionTokens;
  console.log(
    `\n-- 9b. All equally fast (${setup.latency} ms), ${setup.deployments} deployments, tpm ${setup.tpm} / rpm ${setup.rpm}, ` +
      `time scale ${setup.timeScale}, capacity ${fixed(capacity(setup, meanTokens).perSecond, 1)} calls/s, ${o.quotaSeconds} s each --\n`,
  );
  const upstreams = await quotaUpstreams(
    Array.from({ length: setup.deployments }, (_, i) => `d${i}`),
    setup,
    o.inproc,
  );
  const rows: EvenRow[] = [];
  try {
    let seq = 0;
    for (const load of o.loads) {
      for (const mode of seq % 4 === 0 ? MODES : ([...MODES].reverse() as Mode[])) {
        const r = await scenario({
          upstreams,
          setup,
          id: `latency-${++seq}-${mode}-${Math.round(load * 100)}`,
          strategy: mode,
          selector: () => selectorFor(mode, o.seed),
          instances: 1,
          load,
          seconds: o.quotaSeconds,
          sizes,
          meanTokens,
        });
        const ok = Object.values(r.byDeployment).map((d) => d.ok);
        rows.push({ mode, load, r, spread: stddev(ok) / Math.max(1, mean(ok)) });
      }
    }
  } finally {
    await upstreams.close();
  }
  rows.sort((a, b) => a.load - b.load || MODES.indexOf(a.mode) - MODES.indexOf(b.mode));
  console.log(
    table(
      [
        'load',
        'selector',
        'calls',
        'upstream 429s',
        'failed for caller',
        'util mean / max',
        'spread',
      ],
      rows.map(({ mode, load, r, spread }) => [
        pct(load, 0),
        mode === 'latency' ? 'latency: true' : 'utilization only',
        String(r.calls),
        `${r.upstream429} (${pct(r.share429)})`,
        pct(r.failedShare),
        `${pct(r.utilMean, 0)} / ${pct(r.utilMax, 0)}`,
        pct(spread),
      ]),
    ),
  );
  console.log('spread: standard deviation of the answers per deployment over their mean.');
  return rows.map(({ mode, load, r, spread }) => ({
    mode,
    load,
    spread,
    r: { ...r, byDeployment: undefined } as unknown as ScenarioResult,
  }));
}

interface SyntheticRow {
  mode: Mode;
  noise: number;
  /** Mean over time of the largest minus the smallest utilization. */
  gap: number;
  /** Calls no deployment had room for. */
  noRoom: number;
}

/** 9c: equal speeds on a fake clock; three seeds per row. */
function onFakeClock(): SyntheticRow[] {
  console.log(
    '\n-- 9c. The same on a fake clock: 6 deployments of rpm 60, calls at 95 % of it for 3 quota ' +
      'minutes, each answered in 20 ms x e^(noise x N(0,1)); three seeds per row --\n',
  );
  const rows: SyntheticRow[] = [];
  for (const noise of [0, 0.3, 1]) {
    for (const mode of MODES) {
      const runs = [1, 2, 3].map((seed) => fakeClockRun(mode, noise, seed));
      rows.push({
        mode,
        noise,
        gap: mean(runs.map((r) => r.gap)),
        noRoom: runs.reduce((sum, r) => sum + r.noRoom, 0),
      });
    }
  }
  console.log(
    table(
      ['noise', 'selector', 'utilization gap (max - min), mean', 'calls without room'],
      rows.map((r) => [
        fixed(r.noise, 1),
        r.mode === 'latency' ? 'latency: true' : 'utilization only',
        fixed(r.gap, 3),
        String(r.noRoom),
      ]),
    ),
  );
  return rows;
}

function fakeClockRun(mode: Mode, noise: number, seed: number): { gap: number; noRoom: number } {
  let now = 1_700_000_000_000;
  const sb = createSwitchboard({
    deployments: Array.from({ length: 6 }, (_, i) => ({
      provider: 'openai' as const,
      name: `d${i}`,
      baseURL: `http://127.0.0.1:2/d${i}/`,
      apiKey: 'k',
      models: [{ name: MODEL, rpm: 60, tpm: 100_000 }],
    })),
    selector: selectorFor(mode, seed),
    clock: () => now,
    logger: quietLogger(),
  });
  const rng = seeded(seed + 1000);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
  const charge = { input: 100, output: 30 };
  const pool = sb.registry.poolFor(MODEL);
  const states = pool.map((d) => d.models.get(MODEL)!);
  const gate = { admits: (s: ModelState) => s.inFlight.hasRoom() && s.hasRoom(charge) };
  const pending: Array<{ end: number; state: ModelState; sent: number }> = [];
  const every = 60_000 / (6 * 60 * 0.95);
  let next = now;
  let noRoom = 0;
  const gaps: number[] = [];
  for (let t = 0; t < 180_000; t++) {
    now++;
    for (let i = pending.length - 1; i >= 0; i--) {
      const p = pending[i]!;
      if (p.end > now) continue;
      p.state.inFlight.end();
      p.state.latency.answered(p.sent, charge.output);
      p.state.settle(charge, charge);
      pending.splice(i, 1);
    }
    for (; next <= now; next += every) {
      const d = sb.selector.pick(MODEL, pool, gate);
      if (d === undefined) {
        noRoom++;
        continue;
      }
      const state = d.models.get(MODEL)!;
      state.admit(charge);
      state.inFlight.start();
      pending.push({ end: now + Math.round(20 * Math.exp(noise * gauss())), state, sent: now });
    }
    // After the first quota minute, once a second.
    if (t > 60_000 && t % 1000 === 0) {
      const u = states.map((s) => s.util);
      gaps.push(Math.max(...u) - Math.min(...u));
    }
  }
  void sb.close();
  return { gap: mean(gaps), noRoom };
}

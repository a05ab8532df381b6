/**
 * Sections 1 and 2: the original's report (utilization histogram and its five timing lines), and
 * the same requests sent by the switchboard and by plain `openai` clients round-robin, in
 * alternating rounds with a forced collection before each.
 */
import OpenAI from 'openai';
import { createSwitchboard, type DeploymentConfig, type Switchboard } from '../src';
import type { BenchArgs } from './cli';
import { histogram, utilizations } from './histogram';
import { originalLines, runRound, type RoundResult } from './rounds';
import { startUpstreams, type Upstreams } from './upstreams';
import { CANNED } from './surfaces';
import {
  loadAgainst,
  paired,
  pairedNote,
  pairedRows,
  versusLine,
  PAIRED_HEADER,
  type CreateSwitchboard,
  type PairedFigures,
  type PairedSide,
} from './paired';
import { fixed, median, quantile, quietLogger, gcNote, roundStart, table } from './util';

export const MODEL = process.env.BENCH_MODEL ?? 'gpt-4o-mini';

interface Target {
  name: string;
  baseURL: string | undefined;
  apiKey: string;
}

/** The deployments of sections 1-2: simulated ones, or with `--live` the environment's. */
export interface Fixture {
  targets: Target[];
  upstreams: Upstreams | undefined;
  live: boolean;
  close(): Promise<void>;
}

export async function fixture(args: BenchArgs): Promise<Fixture> {
  if (args.live) {
    const real: Array<Omit<Target, 'name'>> = [];
    const endpoint = process.env.AZURE_OPENAI_ENDPOINT;
    const azureKey = process.env.AZURE_OPENAI_API_KEY;
    if (endpoint && azureKey) {
      real.push({ baseURL: `${endpoint.replace(/\/+$/, '')}/openai/v1/`, apiKey: azureKey });
    }
    if (process.env.OPENAI_API_KEY)
      real.push({ baseURL: undefined, apiKey: process.env.OPENAI_API_KEY });
    if (real.length === 0) {
      throw new Error(
        'Set AZURE_OPENAI_ENDPOINT/AZURE_OPENAI_API_KEY or OPENAI_API_KEY to run with --live.',
      );
    }
    // As the original does: the real endpoints registered under -d distinct names.
    const targets = Array.from({ length: args.deployments }, (_, n) => ({
      name: `bench_${n}`,
      ...real[n % real.length]!,
    }));
    return { targets, upstreams: undefined, live: true, close: () => Promise.resolve() };
  }
  const upstreams = await startUpstreams(
    Array.from({ length: args.deployments }, (_, n) => ({
      name: `bench_${n}`,
      latency: args.latency,
    })),
    args.inproc,
  );
  return {
    targets: upstreams.endpoints.map((e) => ({
      name: e.name,
      baseURL: e.openaiBaseURL,
      apiKey: 'bench',
    })),
    upstreams,
    live: false,
    close: () => upstreams.close(),
  };
}

/** `usageWindow` is `--window`'s (default sliding, as the library's). */
function switchboardFor(
  targets: readonly Target[],
  usageWindow: BenchArgs['window'],
  create: CreateSwitchboard = createSwitchboard,
): Switchboard {
  const deployments: DeploymentConfig[] = targets.map((t) => ({
    provider: 'openai',
    name: t.name,
    baseURL: t.baseURL,
    apiKey: t.apiKey,
    // A round (100 calls per deployment by default) must fit Azure's rpm / 6 per 10 s and its
    // tokens: the simulated deployments are Azure's (an `/openai/` path), where a call without
    // max_tokens is charged its prompt plus Azure's 648-token output reservation. A call with no
    // room would fail with a 429 instead of being sent, and a failed call is no measure of a call.
    models: [{ name: MODEL, tpm: 100_000, rpm: 1200 }],
  }));
  return create({ deployments, usageWindow, logger: quietLogger() });
}

const params = (i: number) => ({
  model: MODEL,
  messages: [{ role: 'user' as const, content: `Can you tell me a fact about the number ${i}?` }],
});

/** Section 1: the original's report, for one round after a warm-up round. */
export async function originalReport(
  args: BenchArgs,
  fx: Fixture,
): Promise<Record<string, unknown>> {
  const sb = switchboardFor(fx.targets, args.window);
  const send = (i: number) => sb.chat.completions.create(params(i));
  try {
    console.log(`Distributing ${args.requests} requests across ${args.deployments} deployments`);
    console.log(`Max inflight requests: ${args.inflight}`);
    console.log(
      fx.live
        ? '(live deployments from the environment)'
        : `(simulated deployments, one port each, upstream latency ${args.latency} ms, ${args.inproc ? 'in this process' : 'in a child process'}; after warm-up rounds)`,
    );
    console.log(
      args.window === 'sliding'
        ? "(usageWindow 'sliding', the default: util also weighs the requests of the last 10 s against rpm / 6, as Azure enforces RPM; --window fixed for the original's per-minute util)"
        : "(usageWindow 'fixed': util is the minute's usage over tpm and rpm, as the original's)",
    );
    console.log();
    // Warm-up rounds (JIT, sockets); the original reports a cold first run.
    for (let w = 0; w < (args.smoke ? 1 : 3); w++) {
      await runRound(send, args.requests, args.inflight);
      sb.resetUsage();
    }
    await fx.upstreams?.reset();
    roundStart(args);
    let completed = 0;
    const result = await runRound(send, args.requests, args.inflight, () => {
      completed++;
      if (args.verbose && completed % args.every === 0) {
        console.log(`Request ${completed}/${args.requests} completed`);
        console.log(histogram(utilizations(sb.stats()), { bins: 5, absolute: true }));
        console.log();
      }
    });
    const stats = sb.stats();
    if (args.verbose) {
      console.log(stats);
      console.log();
    }
    console.log(histogram(utilizations(stats), { absolute: true }));
    console.log();
    console.log(originalLines(result));
    if (result.failed) console.log(`Failed requests: ${result.failed}`);
    const utils = utilizations(stats);
    return { round: result, stats, utilStd: stddevOf(utils) };
  } finally {
    await sb.close();
  }
}

function stddevOf(xs: number[]): number {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / xs.length);
}

interface Side {
  rounds: RoundResult[];
  utilStd: number[];
}

/** Section 2: switchboard vs plain `openai` clients round-robin, alternating rounds. */
export async function compare(args: BenchArgs, fx: Fixture): Promise<Record<string, unknown>> {
  const sb = switchboardFor(fx.targets, args.window);
  const clients = fx.targets.map(
    (t) => new OpenAI({ baseURL: t.baseURL, apiKey: t.apiKey, maxRetries: 0, timeout: 30_000 }),
  );
  const n = clients.length;
  const direct = (i: number) => clients[i % n]!.chat.completions.create(params(i));
  const viaSb = (i: number) => sb.chat.completions.create(params(i));
  const sides: Record<'switchboard' | 'direct', Side> = {
    switchboard: { rounds: [], utilStd: [] },
    direct: { rounds: [], utilStd: [] },
  };
  const round = async (which: 'switchboard' | 'direct', record: boolean) => {
    if (!args.noReset) sb.resetUsage();
    roundStart(args);
    const r = await runRound(
      which === 'switchboard' ? viaSb : direct,
      args.requests,
      args.inflight,
    );
    if (!record) return;
    sides[which].rounds.push(r);
    if (which === 'switchboard') sides.switchboard.utilStd.push(stddevOf(utilizations(sb.stats())));
  };
  try {
    console.log(
      `${args.rounds} rounds per side of ${args.requests} requests (-i ${args.inflight}), alternating ` +
        `switchboard / direct (ABBA order), ${gcNote(args)}${fx.live ? '' : `, upstream latency ${args.latency} ms in ${args.inproc ? 'this process' : 'a child process'}`}`,
    );
    await round('switchboard', false);
    await round('direct', false);
    for (let k = 0; k < args.rounds; k++) {
      const order: Array<'switchboard' | 'direct'> =
        k % 2 === 0 ? ['switchboard', 'direct'] : ['direct', 'switchboard'];
      for (const which of order) await round(which, true);
    }
  } finally {
    await sb.close();
  }
  const per = (r: RoundResult) => ({
    overheadUs: (r.distributionMs / r.requests) * 1000,
    throughput: (r.requests / r.totalMs) * 1000,
    cpuUs: r.cpuUs / r.requests,
    latencyMs: r.avgResponseMs,
  });
  const a = sides.switchboard.rounds.map(per);
  const b = sides.direct.rounds.map(per);
  const metric = (key: keyof ReturnType<typeof per>) => {
    const sbVals = a.map((x) => x[key]);
    const dVals = b.map((x) => x[key]);
    const ratios = sbVals.map((v, k) => v / dVals[k]!);
    const half = Math.floor(ratios.length / 2);
    return {
      switchboard: median(sbVals),
      direct: median(dVals),
      difference: median(sbVals.map((v, k) => v - dVals[k]!)),
      ratio: median(ratios),
      ratioQ1: quantile(ratios, 0.25),
      ratioQ3: quantile(ratios, 0.75),
      ratioFirstHalf: median(ratios.slice(0, half)),
      ratioSecondHalf: median(ratios.slice(half)),
    };
  };
  const out = {
    rounds: args.rounds,
    requests: args.requests,
    inflight: args.inflight,
    latency: args.latency,
    upstream: fx.live ? 'live' : args.inproc ? 'in-process' : 'child-process',
    overheadUs: metric('overheadUs'),
    throughput: metric('throughput'),
    cpuUs: metric('cpuUs'),
    latencyMs: metric('latencyMs'),
    failed: { switchboard: sumFailed(sides.switchboard), direct: sumFailed(sides.direct) },
    utilStd: {
      median: median(sides.switchboard.utilStd),
      max: Math.max(...sides.switchboard.utilStd),
    },
  };
  const row = (label: string, m: ReturnType<typeof metric>, digits: number) => [
    label,
    fixed(m.switchboard, digits),
    fixed(m.direct, digits),
    `${m.difference >= 0 ? '+' : ''}${fixed(m.difference, digits)}`,
    fixed(m.ratio, 3),
    `${fixed(m.ratioQ1, 3)}-${fixed(m.ratioQ3, 3)}`,
    `${fixed(m.ratioFirstHalf, 3)} / ${fixed(m.ratioSecondHalf, 3)}`,
  ];
  console.log();
  console.log(
    table(
      [
        'median per round',
        'switchboard',
        'direct',
        'diff (pairs)',
        'ratio',
        'ratio IQR',
        'ratio 1st/2nd half',
      ],
      [
        row('overhead per request (µs)', out.overheadUs, 2),
        row('throughput (req/s)', out.throughput, 0),
        row('CPU per request (µs)', out.cpuUs, 1),
        row('avg response latency (ms)', out.latencyMs, 2),
      ],
    ),
  );
  console.log(
    `Utilization std deviation after each switchboard round: median ${fixed(out.utilStd.median, 4)}, max ${fixed(out.utilStd.max, 4)}` +
      (out.failed.switchboard + out.failed.direct > 0
        ? `\nFailed requests: switchboard ${out.failed.switchboard}, direct ${out.failed.direct}`
        : ''),
  );
  return out;
}

const sumFailed = (s: Side) => s.rounds.reduce((acc, r) => acc + r.failed, 0);

/** A canned Chat Completions answer, served without a socket (the one section 2c uses). */
const cannedFetch = CANNED.chat!;

/**
 * Section 2b: CPU per call of the client alone. Both sides' `openai` clients get a `fetch` that
 * answers at once, so no socket, upstream or kernel time blurs the difference: what is left is
 * the SDK's own work (building the request, parsing the answer) and the switchboard's on top,
 * compared round by round ({@link paired}). With `--against`, another checkout's switchboard runs
 * beside this one.
 */
export async function clientOnly(args: BenchArgs): Promise<Record<string, unknown>> {
  const n = args.deployments;
  const targets = Array.from({ length: n }, (_, i) => ({
    name: `canned_${i}`,
    baseURL: 'http://127.0.0.1:2/v1/',
    apiKey: 'bench',
  }));
  const against = loadAgainst(args.against);
  const sbs: Array<[string, Switchboard]> = [['switchboard', switchboardFor(targets, args.window)]];
  if (against) sbs.push(['switchboard --against', switchboardFor(targets, args.window, against)]);
  for (const [, sb] of sbs) {
    for (const d of sb.deployments.values()) {
      // The deployment's own client, pointed at the canned answer (bench only).
      (d as unknown as { client: { fetch: unknown } }).client.fetch = cannedFetch;
    }
  }
  const clients = targets.map(
    (t) =>
      new OpenAI({
        baseURL: t.baseURL,
        apiKey: t.apiKey,
        maxRetries: 0,
        timeout: 30_000,
        fetch: cannedFetch,
      }),
  );
  const sides: PairedSide[] = sbs.map(([name, sb]) => ({
    name,
    call: (i) => sb.chat.completions.create(params(i)),
    reset: () => sb.resetUsage(),
  }));
  // The same SDK calls on a second set of clients: what this run measures between equal sides.
  const again = targets.map(
    (t) =>
      new OpenAI({
        baseURL: t.baseURL,
        apiKey: t.apiKey,
        maxRetries: 0,
        timeout: 30_000,
        fetch: cannedFetch,
      }),
  );
  sides.push({
    name: 'direct again (noise floor)',
    call: (i) => again[i % n]!.chat.completions.create(params(i)),
  });
  sides.push({ name: 'direct', call: (i) => clients[i % n]!.chat.completions.create(params(i)) });
  const options = {
    cycles: args.cpuCycles,
    calls: 50,
    inflight: 50,
    warmup: args.smoke ? 1 : 5,
  };
  let out: PairedFigures;
  try {
    out = await paired(sides, options);
  } finally {
    for (const [, sb] of sbs) await sb.close();
  }
  console.log(`chat.completions.create, ${n} deployments; ${pairedNote(options)}`);
  console.log(table(PAIRED_HEADER, pairedRows('', out)));
  if (against) console.log(versusLine(out, 'switchboard', 'switchboard --against'));
  return out as unknown as Record<string, unknown>;
}

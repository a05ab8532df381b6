/**
 * Sections 1 and 2: the original's report (utilization histogram and its five timing lines), and
 * the same requests sent by the switchboard and by plain `openai` clients round-robin, in
 * alternating rounds with a forced collection before each.
 */
import OpenAI from 'openai';
import { loadavg } from 'node:os';
import {
  createSwitchboard,
  type DeploymentConfig,
  type Switchboard,
  type SwitchboardOptions,
} from '../src';
import { everyRound, everyRoundReport, type RoundSide } from './every-round';
import { leastWrapper } from './least-wrapper';
import type { BenchArgs } from './cli';
import { histogram, utilizations } from './histogram';
import { originalLines, runRound } from './rounds';
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
import { quietLogger, roundStart, table } from './util';

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
  extra: Partial<SwitchboardOptions> = {},
  limits: { tpm: number; rpm: number } = { tpm: 100_000, rpm: 1200 },
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
    models: [{ name: MODEL, ...limits }],
  }));
  return create({ deployments, usageWindow, logger: quietLogger(), ...extra });
}

const messages = (i: number) => [
  { role: 'user' as const, content: `Can you tell me a fact about the number ${i}?` },
];

const params = (i: number) => ({ model: MODEL, messages: messages(i) });

/**
 * The same params naming one of 10 tenants, written as one literal as a caller writes them: a
 * spread over `params(i)` would charge the tenants' side for V8's generic copy of an object.
 */
const tenantParams = (i: number) => ({
  model: MODEL,
  messages: messages(i),
  tenant: TENANT_NAMES[i % TENANT_NAMES.length]!,
});
const TENANT_NAMES = Array.from({ length: 10 }, (_, k) => `t${k}`);

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

/**
 * Section 2: 1 000 calls launched at once on sockets by a switchboard, by a switchboard with
 * tenants and budgets configured, and by plain `openai` clients round-robin, each built afresh for
 * every round and judged on every round ({@link everyRound}).
 */
export async function compare(args: BenchArgs, fx: Fixture): Promise<Record<string, unknown>> {
  const n = fx.targets.length;
  const viaSwitchboard = (
    name: string,
    extra: Partial<SwitchboardOptions>,
    tenant: boolean,
    create: CreateSwitchboard = createSwitchboard,
  ) => ({
    name,
    open() {
      const sb = switchboardFor(fx.targets, args.window, create, extra, ROUND_LIMITS);
      const send = tenant
        ? (i: number) => sb.chat.completions.create(tenantParams(i))
        : (i: number) => sb.chat.completions.create(params(i));
      return { send, close: () => sb.close() };
    },
  });
  const direct = (name: string): RoundSide => ({
    name,
    open() {
      const clients = fx.targets.map(
        (t) => new OpenAI({ baseURL: t.baseURL, apiKey: t.apiKey, maxRetries: 0, timeout: 30_000 }),
      );
      return {
        send: (i: number) => clients[i % n]!.chat.completions.create(params(i)),
        close: () => Promise.resolve(),
      };
    },
  });
  const against = loadAgainst(args.against);
  const sides: RoundSide[] = [
    viaSwitchboard('switchboard', {}, false),
    viaSwitchboard('tenants', TENANTS, true),
    // With --against, another checkout's switchboard in the same rounds (before / after).
    ...(against ? [viaSwitchboard('against', {}, false, against)] : []),
    // The noise floor: plain clients judged against plain clients, so a target the reference's
    // own round-to-round spread already misses reads as such.
    { ...direct('direct again'), floor: true },
    direct('direct'),
  ];
  const load = () =>
    loadavg()
      .map((x) => x.toFixed(2))
      .join(' ');
  const options = {
    rounds: args.rounds,
    // Several bursts a round (3 by default): a round long enough that a stretch of the machine's
    // noise is a part of it, not all of it (one burst of 1 000 lasts some 50-100 ms).
    batches: args.smoke ? 1 : args.bursts,
    warmup: args.smoke ? 1 : 2,
    requests: args.requests,
    inflight: args.inflight,
    targets: CALL_PATH_TARGETS,
    forcedGc: false,
  };
  console.log(
    `${args.rounds} rounds (after ${options.warmup} unrecorded) per side of ${options.batches} ` +
      `bursts of ${args.requests} requests (-i ${args.inflight}), ${n} deployments; every round a ` +
      `fresh switchboard (or fresh SDK clients), the collector's time during the round counted; ` +
      `each side's round is paired with a round of fresh direct clients next to it (the order ` +
      `within a pair alternating) and judged against it; launch µs is a round's first burst's. ` +
      `'tenants': the same with tenants and budgets configured, each call naming one of 10 ` +
      `tenants; 'direct again': plain clients judged against plain clients (the noise floor)` +
      (fx.live
        ? ''
        : `; upstream latency ${args.latency} ms in ${args.inproc ? 'this process' : 'a child process'}`),
  );
  const out: Record<string, unknown> = {};
  for (const forcedGc of [false, true]) {
    console.log(
      `\n${forcedGc ? 'A full GC before each round (colder code on both sides)' : 'Rounds as they come (no forced GC)'}; load average ${load()}\n`,
    );
    const figures = await everyRound(sides, { ...options, forcedGc });
    console.log(everyRoundReport(figures, CALL_PATH_TARGETS));
    out[forcedGc ? 'forcedGc' : 'steady'] = figures;
  }
  console.log(`(load average after: ${load()})`);
  return { ...out, upstream: fx.live ? 'live' : args.inproc ? 'in-process' : 'child-process' };
}

/** Room for a round's bursts (up to 30, 3 000 calls per deployment) in Azure's minute and 10 s. */
const ROUND_LIMITS = { tpm: 10_000_000, rpm: 60_000 };

/** What the call path must hold at 1 000 in flight, on the worst quartile of the rounds. */
const CALL_PATH_TARGETS = { launchUs: 5, throughput: 0.97, extraUs: 2 };

/** Tenants with limits and budgets far above a round: every call is accounted, none refused. */
const TENANTS: Partial<SwitchboardOptions> = {
  tenants: { '*': { tpm: 100_000_000, budget: { usd: 1_000_000, per: 'day' } } },
  pricing: { [MODEL]: { input: 0.15, output: 0.6 } },
};

/** Plain `openai` clients for `targets`, each answered at once by the canned answer (2b). */
function cannedClients(targets: ReadonlyArray<{ baseURL: string; apiKey: string }>): OpenAI[] {
  return targets.map(
    (t) =>
      new OpenAI({
        baseURL: t.baseURL,
        apiKey: t.apiKey,
        maxRetries: 0,
        timeout: 30_000,
        fetch: cannedFetch,
      }),
  );
}

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
  const clients = cannedClients(targets);
  const sides: PairedSide[] = sbs.map(([name, sb]) => ({
    name,
    call: (i) => sb.chat.completions.create(params(i)),
    reset: () => sb.resetUsage(),
  }));
  // The least any wrapper keeping the SDK's promise contract costs, on clients of its own.
  const least = cannedClients(targets);
  sides.push({ name: 'least wrapper', call: leastWrapper(least, params) });
  // The same SDK calls on a second set of clients: what this run measures between equal sides.
  const again = cannedClients(targets);
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

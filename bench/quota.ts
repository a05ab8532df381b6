/**
 * Section 5: routing on what the upstream enforces. Simulated deployments count as Azure OpenAI
 * does (prompt + `max_tokens` charged at admission and kept for the minute, RPM as rpm/6 per
 * 10 s, `x-ratelimit-*` headers); calls set `max_tokens`. Each scenario runs with today's
 * accounting (the prompt estimate only, no headers read, best effort when nothing is healthy)
 * and with the new one (admission charge, anchoring on the headers, no sending into a known-full
 * window), without and with `queue`, side by side in one run.
 */
import OpenAI from 'openai';
import { createSwitchboard, type DeploymentConfig, type Switchboard } from '../src';
import type { Admission, TokenUsage } from '../src/quota/admission';
import { isNoRoom } from '../src/quota/no-room';
import type { ModelState } from '../src/registry/model-state';
import { promptSizes } from './strategies';
import { startUpstreams, type Upstreams } from './upstreams';
import { fixed, mean, pct, quietLogger, sleep, table } from './util';

const MODEL = 'gpt-4o-mini';
let TIME_SCALE = 20;
let MINUTE = 60_000 / TIME_SCALE;
const LATENCY = 20;
const COMPLETION = 30;

/** How a row's switchboard accounts. */
export type Accounting = 'today' | 'new' | 'new + queue';
const MODES: readonly Accounting[] = ['today', 'new', 'new + queue'];

interface World {
  deployments: number;
  tpm: number;
  rpm: number;
  maxTokens: number;
}

export interface QuotaRow {
  scenario: string;
  accounting: Accounting;
  load: number;
  calls: number;
  ok: number;
  /** Calls the switchboard held back (no room), failed for the caller without an upstream request. */
  noRoom: number;
  /** Calls that failed for the caller, no-room ones included. */
  failed: number;
  upstreamRequests: number;
  upstream429: number;
  /** Successful calls per second over the capacity in calls per second. */
  goodputShare: number;
  /** Another application on one deployment: its requests and 429s. */
  other?: { requests: number; rejected: number };
  waitP50?: number;
}

/**
 * Today's accounting, on a switchboard of this version: charge the prompt estimate only,
 * reconcile to the answer's total, read no headers, and treat a model as having room while its
 * utilization is below 1 (best effort when none has).
 */
function today(sb: Switchboard): void {
  for (const d of sb.deployments.values()) {
    for (const s of d.models.values()) {
      const state = s as ModelState & Record<string, unknown>;
      state.admit = (a: Admission) => state.spend(a.input, 1);
      state.settle = (a: Admission, u: TokenUsage | undefined) => {
        if (u !== undefined) state.spend(u.input + u.output - a.input);
      };
      state.release = (a: Admission) => state.spend(-a.input);
      state.observe = () => undefined;
      state.hasRoom = () => state.isHealthy();
      state.blockedBy = () => (state.isHealthy() ? 'room' : 'down');
    }
  }
}

function charge(world: World, meanPrompt: number): number {
  return meanPrompt + world.maxTokens;
}

/** Capacity in calls per second by the Azure count. */
function capacity(world: World, meanPrompt: number, deployments = world.deployments): number {
  const perMinute = Math.min(world.rpm, world.tpm / charge(world, meanPrompt));
  return (deployments * perMinute * TIME_SCALE) / 60;
}

async function run(o: {
  upstreams: Upstreams;
  world: World;
  scenario: string;
  accounting: Accounting;
  rate: number;
  capacity: number;
  seconds: number;
  sizes: readonly number[];
  /** Another application's rate (calls/s) on the first deployment, straight through the SDK. */
  otherRate?: number;
}): Promise<QuotaRow> {
  const { upstreams, world } = o;
  await upstreams.reset();
  const deployments: DeploymentConfig[] = upstreams.endpoints.map((e) => ({
    provider: 'openai',
    name: e.name,
    baseURL: e.openaiBaseURL,
    apiKey: 'bench',
    timeout: 5000,
    models: [
      { name: MODEL, tpm: world.tpm, rpm: world.rpm, cooldown: Math.round(10_000 / TIME_SCALE) },
    ],
  }));
  const sb = createSwitchboard({
    deployments,
    ratelimitWindow: MINUTE,
    logger: quietLogger(),
    ...(o.accounting === 'new + queue' ? { queue: { maxWait: MINUTE, maxQueued: 10_000 } } : {}),
  });
  if (o.accounting === 'today') today(sb);
  const other = new OpenAI({
    baseURL: upstreams.endpoints[0]!.openaiBaseURL,
    apiKey: 'other',
    maxRetries: 0,
  });
  let calls = 0;
  let ok = 0;
  let failed = 0;
  let noRoom = 0;
  let inFlight = 0;
  const otherStats = { requests: 0, rejected: 0 };
  const waits: number[] = [];
  const launch = (i: number): void => {
    const size = o.sizes[i % o.sizes.length]!;
    calls++;
    inFlight++;
    const t = performance.now();
    sb.chat.completions
      .create({
        model: MODEL,
        max_tokens: world.maxTokens,
        messages: [{ role: 'user', content: 'x'.repeat(size) }],
      })
      .then(
        () => {
          ok++;
          waits.push(performance.now() - t);
        },
        (error: unknown) => {
          failed++;
          if (isNoRoom(error)) noRoom++;
        },
      )
      .finally(() => inFlight--);
  };
  const launchOther = (i: number): void => {
    otherStats.requests++;
    inFlight++;
    other.chat.completions
      .create({
        model: MODEL,
        max_tokens: world.maxTokens,
        messages: [{ role: 'user', content: 'y'.repeat(o.sizes[(i * 7) % o.sizes.length]!) }],
      })
      .catch(() => otherStats.rejected++)
      .finally(() => inFlight--);
  };

  const start = performance.now();
  const end = start + o.seconds * 1000;
  let credit = 0;
  let otherCredit = 0;
  let last = start;
  let i = 0;
  let j = 0;
  while (performance.now() < end) {
    await sleep(4);
    const now = performance.now();
    const dt = (now - last) / 1000;
    last = now;
    credit += dt * o.rate;
    otherCredit += dt * (o.otherRate ?? 0);
    while (credit >= 1) {
      credit--;
      launch(i++);
    }
    while (otherCredit >= 1) {
      otherCredit--;
      launchOther(j++);
    }
  }
  const elapsed = (performance.now() - start) / 1000;
  const drainUntil = performance.now() + 10_000;
  while (inFlight > 0 && performance.now() < drainUntil) await sleep(10);
  const stats = await upstreams.stats();
  await sb.close();
  let upstreamRequests = 0;
  let upstream429 = 0;
  for (const s of Object.values(stats)) {
    upstreamRequests += s.requests;
    upstream429 += s.byStatus[429] ?? 0;
  }
  // The other application's requests are in the upstream's counters too: take them out.
  upstreamRequests -= otherStats.requests;
  upstream429 -= otherStats.rejected;
  waits.sort((a, b) => a - b);
  return {
    scenario: o.scenario,
    accounting: o.accounting,
    load: o.rate / o.capacity,
    calls,
    ok,
    noRoom,
    failed,
    upstreamRequests,
    upstream429,
    goodputShare: ok / elapsed / o.capacity,
    ...(o.otherRate ? { other: otherStats } : {}),
    waitP50: waits.length ? waits[Math.floor(waits.length / 2)] : undefined,
  };
}

export interface QuotaOptions {
  seconds: number;
  seed: number;
  inproc: boolean;
  /** Which scenarios: `steady`, `overload`, `shared` (default all). */
  only?: readonly string[];
  /** A quota minute lasts 60 / timeScale s (default 20: 3 s, long beside the machine's stalls). */
  timeScale?: number;
}

export async function quota(o: QuotaOptions): Promise<Record<string, unknown>> {
  TIME_SCALE = o.timeScale ?? 20;
  MINUTE = 60_000 / TIME_SCALE;
  const sizes = promptSizes(20_000, o.seed);
  const meanPrompt = mean(sizes.map((c) => Math.max(1, Math.ceil(c / 4))));
  const want = (s: string) => o.only === undefined || o.only.includes(s);
  const rows: QuotaRow[] = [];
  const worlds: World[] = [];
  for (const tpm of [10_000, 60_000]) {
    for (const maxTokens of [256, 1024]) {
      worlds.push({ deployments: 3, tpm, rpm: (tpm * 6) / 1000, maxTokens });
    }
  }
  console.log(
    `3 simulated deployments counting as Azure OpenAI does (prompt + max_tokens at admission, ` +
      `kept for the minute; rpm/6 per 10 s; x-ratelimit-* headers), time scale ${TIME_SCALE} ` +
      `(a quota minute lasts ${fixed(MINUTE / 1000, 2)} s), latency ${LATENCY} ms, ` +
      `${COMPLETION} completion tokens per answer.\nPrompts: log-normal, mean ${fixed(meanPrompt, 0)} ` +
      `tokens; every call sets max_tokens. ${o.seconds} s per row. "today": the prompt estimate ` +
      `only, no headers read, best effort; "new": admission charge, anchored on the headers, ` +
      `fail fast when no deployment has room; "new + queue": the same with queue { maxWait: ` +
      `${MINUTE} ms }.`,
  );
  const upstreams = await startUpstreams(
    Array.from({ length: 3 }, (_, n) => ({
      name: `z${n}`,
      tpm: 10_000,
      rpm: 60,
      timeScale: TIME_SCALE,
      latency: LATENCY,
      completionTokens: COMPLETION,
      chargeMaxTokens: true,
    })),
    o.inproc,
  );
  const print = (title: string, rs: readonly QuotaRow[]) => {
    console.log(`\n${title}`);
    console.log(
      table(
        [
          'accounting',
          'calls',
          'upstream req / call',
          'upstream 429s',
          'no room (held back)',
          'failed for caller',
          'goodput',
          'p50 ms',
          ...(rs[0]?.other ? ['other app 429s'] : []),
        ],
        rs.map((r) => [
          r.accounting,
          String(r.calls),
          fixed(r.upstreamRequests / r.calls, 3),
          `${r.upstream429} (${pct(r.upstream429 / r.calls, 2)})`,
          `${r.noRoom} (${pct(r.noRoom / r.calls, 2)})`,
          `${r.failed} (${pct(r.failed / r.calls, 2)})`,
          pct(r.goodputShare, 1),
          r.waitP50 === undefined ? '-' : fixed(r.waitP50, 0),
          ...(r.other
            ? [
                `${r.other.rejected}/${r.other.requests} (${pct(r.other.rejected / r.other.requests, 1)})`,
              ]
            : []),
        ]),
      ),
    );
  };
  const reconfigure = async (world: World) => {
    await upstreams.close();
    return startUpstreams(
      Array.from({ length: world.deployments }, (_, n) => ({
        name: `z${n}`,
        tpm: world.tpm,
        rpm: world.rpm,
        timeScale: TIME_SCALE,
        latency: LATENCY,
        completionTokens: COMPLETION,
        chargeMaxTokens: true,
      })),
      o.inproc,
    );
  };
  let current = upstreams;
  try {
    const scenarios: Array<{
      key: string;
      title: string;
      world: World;
      load: number;
      otherShare?: number;
    }> = [];
    if (want('steady')) {
      for (const w of worlds) {
        scenarios.push({
          key: 'steady',
          title: `95 % of capacity, TPM ${w.tpm}, RPM ${w.rpm}, max_tokens ${w.maxTokens}`,
          world: w,
          load: 0.95,
        });
      }
    }
    if (want('overload')) {
      scenarios.push({
        key: 'overload',
        title: `150 % offered, TPM 10000, RPM 60, max_tokens 256`,
        world: worlds[0]!,
        load: 1.5,
      });
    }
    if (want('shared')) {
      scenarios.push({
        key: 'shared',
        title:
          'z0 half used by another application (unseen by the switchboard); switchboard at 80 % of ' +
          'the remaining capacity, TPM 10000, RPM 60, max_tokens 256',
        world: worlds[0]!,
        load: 0.8,
        otherShare: 0.5,
      });
    }
    let configured: World | undefined;
    for (const s of scenarios) {
      if (configured !== s.world) {
        current = await reconfigure(s.world);
        configured = s.world;
      }
      const cap = capacity(s.world, meanPrompt);
      const perDeployment = cap / s.world.deployments;
      const otherRate = s.otherShare ? s.otherShare * perDeployment : undefined;
      const usable = s.otherShare ? cap - (otherRate ?? 0) : cap;
      const rs: QuotaRow[] = [];
      for (const accounting of MODES) {
        rs.push(
          await run({
            upstreams: current,
            world: s.world,
            scenario: s.key,
            accounting,
            rate: s.load * usable,
            capacity: usable,
            seconds: o.seconds,
            sizes,
            otherRate,
          }),
        );
      }
      rows.push(...rs);
      print(
        `${s.title} (${fixed(s.load * usable, 1)} calls/s offered, capacity ${fixed(usable, 1)}):`,
        rs,
      );
    }
  } finally {
    await current.close();
  }
  return { meanPrompt, timeScale: TIME_SCALE, seconds: o.seconds, rows };
}

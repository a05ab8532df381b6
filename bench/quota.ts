/**
 * Section 5: routing on what the upstream enforces. Simulated deployments count as Azure OpenAI
 * does (prompt + `max_tokens` charged at admission and kept for the minute, RPM as rpm/6 per
 * 10 s, `x-ratelimit-*` headers); calls set `max_tokens`. Each scenario runs with today's
 * accounting (the prompt estimate only, no headers read, best effort when nothing is healthy)
 * and with the new one (admission charge, anchoring on the headers, no sending into a known-full
 * window), without and with `queue`, side by side in one run.
 */
import OpenAI from 'openai';
import { createSwitchboard, type Switchboard } from '../src';
import type { Admission, TokenUsage } from '../src/quota/admission';
import { isNoRoom } from '../src/quota/no-room';
import type { QuotaLedger } from '../src/quota/quota-ledger';
import type { HeaderSource } from '../src/quota/rate-limit-headers';
import type { ModelState } from '../src/registry/model-state';
import { promptSizes } from './strategies';
import { openaiDeployments, startUpstreams, type Upstreams } from './upstreams';
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
  /**
   * Share of the upstream's admission capacity used by calls that succeeded, as Azure counts it:
   * prompt + `max_tokens` of the successful calls answered within the row, per quota minute, over
   * TPM × deployments (or their count over RPM × deployments, whichever binds), over the row.
   */
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
      state.admit = (a: Admission) => {
        state.spend(a.input, 1);
        return Date.now();
      };
      state.settle = (a: Admission, u: TokenUsage | undefined) => {
        if (u !== undefined) state.spend(u.input + u.output - a.input);
      };
      state.release = (a: Admission) => state.spend(-a.input);
      const quota = state.quota as QuotaLedger & Record<string, unknown>;
      quota.observe = () => undefined;
      state.hasRoom = () => state.isHealthy();
      // Every 429 cools the model: no view explains one (nothing else asks the quota alone here).
      quota.hasRoom = () => true;
      state.blockedBy = () => (state.isHealthy() ? 'room' : 'down');
    }
  }
}

/**
 * Records, per deployment, the switchboard's anchored view at each send, and prints every
 * upstream 429 (seen as a `rate_limit` cooldown) with the view at the send before it and the
 * upstream's own count from the 429's headers.
 */
/** The calls a model state has in flight (read for the trace only). */
function inFlight(state: ModelState): Readonly<{ tokens: number; requests: number }> {
  return state.quota.inFlight;
}

function traceRejections(sb: Switchboard, limit: number): { print(): void } {
  const t0 = performance.now();
  const lines: string[] = [];
  let seen = 0;
  for (const d of sb.deployments.values()) {
    for (const s of d.models.values()) {
      const state = s as ModelState & Record<string, unknown>;
      const admit = state.admit.bind(state);
      const quota = state.quota as QuotaLedger & Record<string, unknown>;
      const observe = quota.observe.bind(quota);
      const sends = new WeakMap<Admission, string>();
      let lastHeader = 0;
      state.admit = (a: Admission) => {
        const view = quota.anchoredUsage();
        const p = inFlight(state);
        sends.set(
          a,
          `sent ${a.input}+${a.output} at ${fixed((performance.now() - t0) / MINUTE, 3)} min onto ` +
            `anchored ${Math.round(view.tpm)} tok / ${fixed(view.rpm, 1)} req ` +
            `(local ${Math.round(quota.localUsage().tokens)} tok, recent ${quota.recent()?.used ?? 0} req, ` +
            `in flight ${p.requests} / ${p.tokens} tok, header ` +
            `${fixed((performance.now() - lastHeader) / MINUTE, 3)} min old, queue ${sb.queue?.length(MODEL) ?? 0})`,
        );
        return admit(a);
      };
      const history: string[] = [];
      quota.observe = (headers: HeaderSource, own?: Admission, sentAt?: number) => {
        const h = headers as Headers;
        lastHeader = performance.now();
        const before = quota.localUsage().tokens;
        const pending = inFlight(state).tokens;
        const tokens = h.get('x-ratelimit-remaining-tokens');
        const requests = h.get('x-ratelimit-remaining-requests');
        const retry = h.get('retry-after-ms');
        if (retry !== null) {
          seen++;
          if (lines.length < limit) {
            lines.push(
              `${d.name} 429 at ${fixed((performance.now() - t0) / MINUTE, 3)} min: upstream left ` +
                `${tokens} tok / ${requests} req, retry in ${retry} ms; ${own ? sends.get(own) : '?'}\n      ${history.join('\n      ')}`,
            );
          }
        }
        observe(headers, own, sentAt);
        history.push(
          `${fixed((performance.now() - t0) / MINUTE, 3)}: upstream ${quota.limits.tpm.value - Number(h.get('x-ratelimit-remaining-tokens'))} ` +
            `(reset ${h.get('x-ratelimit-reset-tokens')}), ours ${Math.round(before)} → ${Math.round(quota.localUsage().tokens)}, ` +
            `pending ${pending}${retry !== null ? ' (429)' : ''}`,
        );
        if (history.length > 8) history.shift();
      };
    }
  }
  return {
    print() {
      if (seen === 0) return;
      console.log(`  ${seen} upstream 429s; the first ${lines.length}:`);
      for (const l of lines) console.log(`    ${l}`);
    },
  };
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
  /** Deployments' worth of capacity left to the switchboard (the other application's taken out). */
  usableDeployments: number;
  /** Print each upstream 429 with the switchboard's view of the deployment when it sent. */
  trace?: number;
}): Promise<QuotaRow> {
  const { upstreams, world } = o;
  await upstreams.reset();
  const deployments = openaiDeployments(
    upstreams.endpoints,
    { name: MODEL, tpm: world.tpm, rpm: world.rpm },
    TIME_SCALE,
  );
  const sb = createSwitchboard({
    deployments,
    ratelimitWindow: MINUTE,
    logger: quietLogger(),
    ...(o.accounting === 'new + queue' ? { queue: { maxWait: MINUTE, maxQueued: 10_000 } } : {}),
  });
  if (o.accounting === 'today') today(sb);
  const tracer = o.trace ? traceRejections(sb, o.trace) : undefined;
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
  /** Azure's count of the successful calls answered while the row ran, and how many. */
  let goodTokens = 0;
  let goodCalls = 0;
  let rowEnd = Infinity;
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
          const done = performance.now();
          waits.push(done - t);
          if (done <= rowEnd) {
            goodCalls++;
            goodTokens += Math.max(1, Math.ceil(size / 4)) + world.maxTokens;
          }
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
  rowEnd = end;
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
  rowEnd = start + elapsed * 1000;
  const drainUntil = performance.now() + 10_000;
  while (inFlight > 0 && performance.now() < drainUntil) await sleep(10);
  const stats = await upstreams.stats();
  tracer?.print();
  await sb.close();
  // Per quota minute, as the upstream's capacity is stated. Each fixed window it opens holds a
  // whole TPM, the last one too: rows of whole quota minutes read true; a row that ends inside a
  // window can read above 100 %.
  const minutes = (elapsed * 1000) / MINUTE;
  const byTokens = goodTokens / (world.tpm * o.usableDeployments * minutes);
  const byRequests = goodCalls / (world.rpm * o.usableDeployments * minutes);
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
    goodputShare: Math.max(byTokens, byRequests),
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
  /** TPM of the steady rows (default 10 000 and 60 000). */
  tpms?: readonly number[];
  /** `max_tokens` of the steady rows (default 256 and 1024). */
  maxTokens?: readonly number[];
  /** Which accountings (default all three). */
  modes?: readonly Accounting[];
  /** Print up to this many upstream 429s per row with the switchboard's view when it sent. */
  trace?: number;
}

export async function quota(o: QuotaOptions): Promise<Record<string, unknown>> {
  TIME_SCALE = o.timeScale ?? 20;
  MINUTE = 60_000 / TIME_SCALE;
  const sizes = promptSizes(20_000, o.seed);
  const meanPrompt = mean(sizes.map((c) => Math.max(1, Math.ceil(c / 4))));
  const want = (s: string) => o.only === undefined || o.only.includes(s);
  const rows: QuotaRow[] = [];
  const worlds: World[] = [];
  for (const tpm of o.tpms ?? [10_000, 60_000]) {
    for (const maxTokens of o.maxTokens ?? [256, 1024]) {
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
    const hard: World = { deployments: 3, tpm: 10_000, rpm: 60, maxTokens: 256 };
    if (want('overload')) {
      scenarios.push({
        key: 'overload',
        title: `150 % offered, TPM 10000, RPM 60, max_tokens 256`,
        world: hard,
        load: 1.5,
      });
    }
    if (want('shared')) {
      scenarios.push({
        key: 'shared',
        title:
          'z0 half used by another application (unseen by the switchboard); switchboard at 80 % of ' +
          'the remaining capacity, TPM 10000, RPM 60, max_tokens 256',
        world: hard,
        load: 0.8,
        otherShare: 0.5,
      });
    }
    let configured: World | undefined;
    for (const s of scenarios) {
      if (
        configured === undefined ||
        configured.tpm !== s.world.tpm ||
        configured.rpm !== s.world.rpm ||
        configured.deployments !== s.world.deployments
      ) {
        current = await reconfigure(s.world);
        configured = s.world;
      }
      const cap = capacity(s.world, meanPrompt);
      const perDeployment = cap / s.world.deployments;
      const otherRate = s.otherShare ? s.otherShare * perDeployment : undefined;
      const usable = s.otherShare ? cap - (otherRate ?? 0) : cap;
      const rs: QuotaRow[] = [];
      for (const accounting of o.modes ?? MODES) {
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
            usableDeployments: s.world.deployments - (s.otherShare ?? 0),
            trace: o.trace,
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

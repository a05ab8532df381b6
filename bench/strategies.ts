/**
 * Section 4: strategies under Azure-like quotas. Simulated deployments enforce TPM per (scaled)
 * minute and RPM as rpm/6 per (scaled) 10 s; calls arrive at a steady rate (open loop) of 80 %,
 * 95 % and 110 % of the deployments' total capacity, with log-normal prompt sizes; one switchboard,
 * then several that share the deployments without coordinating, and (with a shared state store)
 * the same replicas sharing their view, side by side.
 */
import { createSwitchboard, type Selector, type Switchboard } from '../src';
import type { StateStore } from '../src/extend';
import { isNoRoom } from '../src/quota/no-room';
import { STRATEGIES } from './selectors';
import { openaiDeployments, startUpstreams, type Upstreams } from './upstreams';
import { fixed, gc, mean, pct, quietLogger, seeded, sleep, table } from './util';

const MODEL = 'gpt-4o-mini';

/** The quota world of the scenarios. */
export interface QuotaSetup {
  deployments: number;
  tpm: number;
  rpm: number;
  /** A quota minute lasts 60 / timeScale s. */
  timeScale: number;
  /** Upstream latency, ms. */
  latency: number;
  /** Fixed completion size of every answer, tokens. */
  completionTokens: number;
}

/**
 * Simulated deployments named `names`, each enforcing `setup`'s quotas at its time scale and
 * answering after its latency with its completion size.
 */
export function quotaUpstreams(
  names: readonly string[],
  setup: QuotaSetup,
  inproc: boolean,
): Promise<Upstreams> {
  return startUpstreams(
    names.map((name) => ({
      name,
      tpm: setup.tpm,
      rpm: setup.rpm,
      timeScale: setup.timeScale,
      latency: setup.latency,
      completionTokens: setup.completionTokens,
      // Callers are modelled as capping output at the answer's size: without it Azure's admission
      // count reserves its large inferred default per call and the quotas here admit ~2 calls a minute.
      inferredMaxTokens: setup.completionTokens,
    })),
    inproc,
  );
}

export const DEFAULT_SETUP: QuotaSetup = {
  deployments: 6,
  tpm: 10_000,
  rpm: 60,
  timeScale: 60,
  latency: 20,
  completionTokens: 30,
};

/** Which scenario a state store is built for. */
export interface StateScenario {
  /** Unique within a run, e.g. `7-2rc-load95-4x`: a shared store keeps each scenario's keys apart. */
  id: string;
  /** Instance number, from 0. */
  instance: number;
  setup: QuotaSetup;
}

/** Builds the `state` of each instance of a scenario. */
export type StateFactory = (scenario: StateScenario) => StateStore;

export interface ScenarioResult {
  strategy: string;
  instances: number;
  load: number;
  offeredPerSecond: number;
  calls: number;
  /** Calls that rejected for the caller after failover. */
  failed: number;
  /** The part of `failed` the switchboard held back (no room by its view; nothing was sent). */
  heldBack: number;
  failedByClass: Record<string, number>;
  upstreamRequests: number;
  upstream429: number;
  /** 429 answers per call. */
  share429: number;
  failedShare: number;
  /** Tokens of successful answers per second of wall time. */
  goodput: number;
  /** Goodput as a share of the total TPM capacity. */
  goodputShare: number;
  /** True upstream utilization (tokens or requests in the trailing quota minute over the limit). */
  utilMean: number;
  utilMax: number;
  /** Instances whose state store was degraded at the end, or never synced. */
  storeProblems: number;
  /** Mark-downs the instances decided themselves (after a 429), all instances together. */
  cooldowns: number;
  /**
   * Cooldown episodes: per deployment, runs of overlapping mark-downs by any instance (a cooldown
   * another instance only applied from a shared store is not a mark-down of its own).
   */
  cooldownEpisodes: number;
  /**
   * Cooldown spread: instances that took a 429 of their own per episode, on average. 1 = the
   * first 429 kept every other replica off; N = each replica found out by itself.
   */
  cooldownSpread: number;
  /** Per upstream deployment: successful answers and 429s. */
  byDeployment: Record<string, { ok: number; rateLimited: number }>;
  /** Seconds the calls arrived over. */
  elapsed: number;
}

interface DownEvent {
  t: number;
  until: number;
  instance: number;
}

/** Groups each deployment's mark-downs into episodes of overlapping cooldowns. */
export function cooldownEpisodes(events: ReadonlyMap<string, DownEvent[]>): {
  episodes: number;
  spread: number;
} {
  let episodes = 0;
  let hit = 0;
  for (const list of events.values()) {
    const sorted = [...list].sort((a, b) => a.t - b.t);
    let end = -Infinity;
    let instances = new Set<number>();
    for (const e of sorted) {
      if (e.t >= end) {
        hit += instances.size;
        instances = new Set();
        episodes++;
      }
      instances.add(e.instance);
      end = Math.max(end, e.until);
    }
    hit += instances.size;
  }
  return { episodes, spread: episodes > 0 ? hit / episodes : NaN };
}

/** Prompt sizes in characters: log-normal (heavy tail), capped, from a seeded source. */
export function promptSizes(count: number, seed: number): number[] {
  const rng = seeded(seed);
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    // Box-Muller; median ~540 chars, mean ~880 chars (~220 tokens), capped at 6000.
    const z = Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
    out.push(Math.min(6000, Math.max(8, Math.round(Math.exp(6.3 + z)))));
  }
  return out;
}

/** Capacity of the setup in calls per second, given the mean tokens per call. */
export function capacity(
  setup: QuotaSetup,
  meanTokens: number,
): { perSecond: number; bound: string } {
  const perMinute = Math.min(setup.rpm, setup.tpm / meanTokens);
  return {
    perSecond: (setup.deployments * perMinute * setup.timeScale) / 60,
    bound: setup.rpm <= setup.tpm / meanTokens ? 'RPM' : 'TPM',
  };
}

/** `usageWindow` of the switchboards: `sliding` (the library's default) or `fixed`. */
export type WindowMode = 'fixed' | 'sliding';

export interface RunOptions {
  /** `usageWindow` of the switchboards; absent = the library's default (sliding). */
  window?: WindowMode;
  upstreams: Upstreams;
  setup: QuotaSetup;
  /** Unique within a run (the state store's key prefix is built from it). */
  id: string;
  strategy: string;
  selector: () => Selector;
  instances: number;
  load: number;
  seconds: number;
  sizes: readonly number[];
  meanTokens: number;
  state?: StateFactory;
  /** Quota-clock seconds a call may wait for room (`queue: { maxWait }`); 0 or absent = fail fast. */
  queue?: number;
  /** `priority` of each deployment by name; absent = one flat pool. */
  priority?: (deployment: string) => number | undefined;
}

export async function scenario(o: RunOptions): Promise<ScenarioResult> {
  const { setup, upstreams } = o;
  await upstreams.reset();
  const scaledMinute = 60_000 / setup.timeScale;
  const deployments = openaiDeployments(
    upstreams.endpoints,
    { name: MODEL, tpm: setup.tpm, rpm: setup.rpm },
    setup.timeScale,
    o.priority,
  );
  // A quota minute of the scaled clock; the switchboard counts it as `usageWindow` says (a
  // shared store adds the others' usage over the same sliding minute).
  const sbs: Switchboard[] = Array.from({ length: o.instances }, (_, instance) =>
    createSwitchboard({
      deployments,
      selector: o.selector(),
      ratelimitWindow: Math.round(scaledMinute),
      ...(o.window ? { usageWindow: o.window } : {}),
      logger: quietLogger(),
      ...(o.queue ? { queue: { maxWait: Math.round((o.queue * 1000) / setup.timeScale) } } : {}),
      ...(o.state ? { state: o.state({ id: o.id, instance, setup }) } : {}),
    }),
  );
  const downs = new Map<string, DownEvent[]>();
  sbs.forEach((sb, instance) =>
    sb.registry.onModelEvent((state, event) => {
      if (event.type !== 'down') return;
      const list = downs.get(state.deployment) ?? [];
      list.push({ t: Date.now(), until: event.until, instance });
      downs.set(state.deployment, list);
    }),
  );
  const rate = o.load * capacity(setup, o.meanTokens).perSecond;
  let calls = 0;
  let failed = 0;
  let heldBack = 0;
  let inFlight = 0;
  const failedByClass: Record<string, number> = {};
  const launch = (i: number): void => {
    const sb = sbs[i % sbs.length]!;
    const size = o.sizes[i % o.sizes.length]!;
    calls++;
    inFlight++;
    sb.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'x'.repeat(size) }] })
      .catch((error: unknown) => {
        failed++;
        if (isNoRoom(error)) heldBack++;
        const name = error instanceof Error ? error.constructor.name : typeof error;
        failedByClass[name] = (failedByClass[name] ?? 0) + 1;
      })
      .finally(() => inFlight--);
  };

  // True utilization, sampled at the upstream: usage over the trailing quota minute.
  const history: Array<{ t: number; tokens: Record<string, number>; ok: Record<string, number> }> =
    [];
  const utils: number[] = [];
  const sampleUpstream = async (t: number): Promise<void> => {
    const stats = await upstreams.stats();
    const point = { t, tokens: {} as Record<string, number>, ok: {} as Record<string, number> };
    for (const [name, s] of Object.entries(stats)) {
      point.tokens[name] = s.totalTokens;
      point.ok[name] = s.ok;
    }
    history.push(point);
    const past = history.find((h) => h.t >= t - scaledMinute);
    if (past && t - past.t >= scaledMinute * 0.95) {
      for (const name of Object.keys(point.tokens)) {
        const tok = (point.tokens[name]! - past.tokens[name]!) / setup.tpm;
        const req = (point.ok[name]! - past.ok[name]!) / setup.rpm;
        utils.push(Math.max(tok, req));
      }
    }
  };

  gc();
  const start = performance.now();
  const end = start + o.seconds * 1000;
  let credit = 0;
  let last = start;
  let i = 0;
  let nextSample = start;
  while (performance.now() < end) {
    await sleep(4);
    const now = performance.now();
    credit += ((now - last) / 1000) * rate;
    last = now;
    while (credit >= 1) {
      credit--;
      launch(i++);
    }
    if (now >= nextSample) {
      nextSample += scaledMinute / 10;
      await sampleUpstream(now - start);
    }
  }
  const elapsed = (performance.now() - start) / 1000;
  const drainUntil = performance.now() + 10_000;
  while (inFlight > 0 && performance.now() < drainUntil) await sleep(10);
  const stats = await upstreams.stats();
  // A shared store that could not sync leaves each instance on its own count: say so.
  const storeProblems = sbs.filter((sb) => {
    const h = sb.state.health();
    return h.status !== 'up' || (h.store !== 'memory' && h.lastSync === undefined);
  }).length;
  await Promise.all(sbs.map((sb) => sb.close()));
  let upstreamRequests = 0;
  let upstream429 = 0;
  let tokens = 0;
  const byDeployment: ScenarioResult['byDeployment'] = {};
  for (const [name, s] of Object.entries(stats)) {
    byDeployment[name] = { ok: s.ok, rateLimited: s.byStatus[429] ?? 0 };
    upstreamRequests += s.requests;
    upstream429 += s.byStatus[429] ?? 0;
    tokens += s.totalTokens;
  }
  const goodput = tokens / elapsed;
  const episodes = cooldownEpisodes(downs);
  return {
    strategy: o.strategy,
    instances: o.instances,
    load: o.load,
    offeredPerSecond: rate,
    calls,
    failed,
    heldBack,
    failedByClass,
    upstreamRequests,
    upstream429,
    share429: upstream429 / calls,
    failedShare: failed / calls,
    goodput,
    goodputShare: goodput / ((setup.deployments * setup.tpm * setup.timeScale) / 60),
    utilMean: mean(utils),
    utilMax: utils.length ? Math.max(...utils) : NaN,
    storeProblems,
    cooldowns: [...downs.values()].reduce((n, l) => n + l.length, 0),
    cooldownEpisodes: episodes.episodes,
    cooldownSpread: episodes.spread,
    byDeployment,
    elapsed,
  };
}

export interface StrategiesOptions {
  window: WindowMode;
  seconds: number;
  loads: readonly number[];
  instances: number;
  /** See {@link RunOptions.queue}. */
  queue?: number;
  seed: number;
  inproc: boolean;
  state?: { name: string; factory: StateFactory };
  setup?: QuotaSetup;
  strategies?: readonly string[];
}

export async function strategies(o: StrategiesOptions): Promise<Record<string, unknown>> {
  const setup = o.setup ?? DEFAULT_SETUP;
  const sizes = promptSizes(20_000, o.seed);
  const meanTokens = mean(sizes.map((c) => Math.max(1, Math.ceil(c / 4)))) + setup.completionTokens;
  const cap = capacity(setup, meanTokens);
  console.log(
    `${setup.deployments} simulated deployments, each ${MODEL} tpm ${setup.tpm} / rpm ${setup.rpm} ` +
      `(enforced as tpm per minute and rpm/6 per 10 s), time scale ${setup.timeScale} ` +
      `(a quota minute lasts ${fixed(60 / setup.timeScale, 2)} s), upstream latency ${setup.latency} ms.\n` +
      `Prompts: log-normal, median ${fixed(sortedMedian(sizes) / 4, 0)} tokens, mean ${fixed(meanTokens - setup.completionTokens, 0)} ` +
      `(cap 1500), plus ${setup.completionTokens} completion tokens: mean ${fixed(meanTokens, 0)} tokens per call.\n` +
      `Capacity: ${fixed(cap.perSecond, 0)} calls/s (${cap.bound}-bound), ${fixed((setup.deployments * setup.tpm * setup.timeScale) / 60, 0)} tokens/s. ` +
      `Calls arrive at a steady rate for ${o.seconds} s per scenario; failover: 2 attempts (the default); ` +
      (o.queue
        ? `a call finding no room waits up to ${o.queue} s of the quota clock (queue.maxWait ${Math.round((o.queue * 1000) / setup.timeScale)} ms).\n`
        : 'a call finding no room fails at once (no queue).\n') +
      `Usage window: ${o.window === 'sliding' ? "usageWindow 'sliding' (the default: the quota minute that ends now, plus the rpm/6-per-10-s term)" : "usageWindow 'fixed' (all usage reset every quota minute)"}, ` +
      `ratelimitWindow ${Math.round(60_000 / setup.timeScale)} ms; "fixed window" rows use usageWindow 'fixed' whatever --window says` +
      (o.state
        ? `; the ${o.instances} replicas run uncoordinated, then sharing state, for each load.`
        : '.'),
  );
  const upstreams = await quotaUpstreams(
    Array.from({ length: setup.deployments }, (_, n) => `q${n}`),
    setup,
    o.inproc,
  );
  const names = o.strategies ?? Object.keys(STRATEGIES);
  for (const n of names) {
    if (!STRATEGIES[n])
      throw new Error(`unknown strategy ${n} (known: ${Object.keys(STRATEGIES).join(', ')})`);
  }
  const results: ScenarioResult[] = [];
  const modes: Array<{ instances: number; state?: StateFactory; label: string }> = [
    { instances: 1, label: '1 switchboard' },
  ];
  if (o.instances > 1) {
    modes.push({
      instances: o.instances,
      label: `${o.instances} switchboards, uncoordinated (state: memory)`,
    });
  }
  if (o.instances > 1 && o.state) {
    modes.push({
      instances: o.instances,
      state: o.state.factory,
      label: `${o.instances} switchboards sharing state (${o.state.name})`,
    });
  }
  try {
    // Warm-up (JIT, sockets, the child's first windows), not reported.
    await scenario({
      window: o.window,
      upstreams,
      setup,
      id: 'warm-up',
      strategy: 'warm-up',
      selector: STRATEGIES['2rc']!.make,
      instances: 1,
      load: o.loads[0]!,
      seconds: Math.min(1.5, o.seconds),
      sizes,
      meanTokens,
    });
    let seq = 0;
    // Load by load, every mode in turn: the rows compared below ran minutes apart, not a section.
    for (const load of o.loads) {
      const byMode: ScenarioResult[][] = [];
      for (const mode of modes) {
        const rows: ScenarioResult[] = [];
        for (const strategy of names) {
          const r = await scenario({
            window: STRATEGIES[strategy]!.window ?? o.window,
            upstreams,
            setup,
            id: `${++seq}-${strategy}-load${Math.round(load * 100)}-${mode.instances}x`,
            strategy: STRATEGIES[strategy]!.label,
            selector: STRATEGIES[strategy]!.make,
            instances: mode.instances,
            load,
            seconds: o.seconds,
            sizes,
            meanTokens,
            state: mode.state,
            queue: o.queue,
          });
          rows.push(r);
          results.push(r);
          if (r.storeProblems > 0) {
            console.log(
              `warning: ${r.strategy} at ${pct(load, 0)}: the state store of ${r.storeProblems} of ${mode.instances} instances was degraded or never synced`,
            );
          }
        }
        console.log(
          `\nOffered load ${pct(load, 0)} (${fixed(rows[0]!.offeredPerSecond, 0)} calls/s), ${mode.label}:`,
        );
        console.log(
          table(
            [
              'strategy',
              'calls',
              'upstream 429s',
              'failed for caller',
              'goodput tok/s',
              'util mean / max',
              'cooldown episodes / spread',
            ],
            rows.map((r) => [
              r.strategy,
              String(r.calls),
              `${r.upstream429} (${pct(r.share429, 2)})`,
              `${r.failed} (${pct(r.failedShare, 2)})`,
              `${fixed(r.goodput, 0)} (${pct(r.goodputShare, 0)})`,
              `${fixed(r.utilMean, 3)} / ${fixed(r.utilMax, 3)}`,
              `${r.cooldownEpisodes} / ${fixed(r.cooldownSpread, 2)}`,
            ]),
          ),
        );
        byMode.push(rows);
      }
      if (o.state && byMode.length === 3) {
        const [, alone, shared] = byMode as [ScenarioResult[], ScenarioResult[], ScenarioResult[]];
        console.log(
          `\n${o.instances} replicas uncoordinated vs ${o.state.name.split(' ')[0]}State at ${pct(load, 0)} ` +
            '(same run; spread = replicas that took a 429 of their own per cooldown episode):',
        );
        console.log(
          table(
            [
              'strategy',
              'upstream 429s',
              'failed for caller',
              'of them held back',
              'cooldown spread',
              'goodput',
            ],
            alone.map((a, k) => {
              const r = shared[k]!;
              return [
                a.strategy,
                `${pct(a.share429, 2)} -> ${pct(r.share429, 2)}`,
                `${pct(a.failedShare, 2)} -> ${pct(r.failedShare, 2)}`,
                `${pct(a.heldBack / a.calls, 2)} -> ${pct(r.heldBack / r.calls, 2)}`,
                `${fixed(a.cooldownSpread, 2)} -> ${fixed(r.cooldownSpread, 2)}`,
                `${pct(a.goodputShare, 0)} -> ${pct(r.goodputShare, 0)}`,
              ];
            }),
          ),
        );
      }
    }
  } finally {
    await upstreams.close();
  }
  return {
    setup,
    window: o.window,
    meanTokens,
    capacityPerSecond: cap.perSecond,
    bound: cap.bound,
    seconds: o.seconds,
    results,
  };
}

function sortedMedian(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/**
 * Section 6b: the quota fidelity matrix. Each kind of upstream whose documented rules the
 * simulated deployments enforce (`src/testing/rules/`: Azure standard with 10-s and 1-s request
 * windows, OpenAI's token buckets, Anthropic's ITPM / OTPM buckets, Azure PTU utilization), under
 * three load shapes (a minute's capacity in one burst each minute, a steady 95 %, a steady 150 %),
 * without and with `queue`: how many calls the switchboard sends into upstream 429s, and how much
 * of the upstream's capacity its successful calls use.
 *
 * Everything runs in virtual time: the switchboard and the simulated deployments read one clock
 * that the driver moves in steps, and only once every call sent has reached the upstream (or come
 * back), so a quota minute costs what its calls cost, never a wall-clock minute. The upstream holds
 * each admitted answer for a seeded latency of that clock (0.5-8 s), so answers come back in
 * another order than they were sent, as LLM answers do.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import type { DeploymentConfig, ModelConfig, Switchboard } from '../src';
import { SimulatedUpstream, type SimulatedDeploymentOptions } from '../src/testing';
import type { CreateSwitchboard } from './paired';
import { promptSizes } from './strategies';
import { fixed, mean, pct, quietLogger, seeded, table } from './util';

const MINUTE = 60_000;
/** Virtual ms the clock moves per step: a tenth of Azure's shortest request window. */
const STEP = 100;
/** Output tokens of every answer (below every row's `max_tokens`). */
const COMPLETION = 40;
/** Answers come back this long after admission, uniformly drawn (virtual ms). */
const LATENCY = { min: 500, max: 8_000 };
/** Real ms the driver waits for calls on their way before it moves the clock anyway. */
const SETTLE_LIMIT_MS = 250;

/** The kinds of upstream rules of the matrix. */
export const RULE_KINDS = ['azure-10s', 'azure-1s', 'openai', 'anthropic', 'azure-ptu'] as const;
export type RuleKind = (typeof RULE_KINDS)[number];

/** The load shapes of the matrix. */
export const LOAD_SHAPES = ['burst', 'steady', 'over'] as const;
export type LoadShape = (typeof LOAD_SHAPES)[number];

const SHAPE_TITLES: Record<LoadShape, string> = {
  burst: "burst (a minute's capacity at once, each minute)",
  steady: 'steady 95 %',
  over: 'steady 150 %',
};

/** What a successful call used, as its answer reports it. */
interface Usage {
  input: number;
  output: number;
  /** Input tokens read from the upstream's prompt cache (part of `input`). */
  cached: number;
}

/** One kind of upstream: what the simulated deployment enforces and how the switchboard is told. */
interface Kind {
  title: string;
  provider: 'openai' | 'anthropic';
  model: string;
  maxTokens: number;
  upstream: Omit<SimulatedDeploymentOptions, 'name'>;
  /** The model as a user configures it: the limits the portal shows, nothing learned. */
  config: ModelConfig;
  /** The same with settings an older checkout may refuse (tried first, dropped if refused). */
  extra?: Partial<ModelConfig> & Record<string, unknown>;
  /** Calls a minute one deployment can take, for calls of `prompt` tokens on average. */
  callsPerMinute(prompt: number): number;
  /** What a successful call counted against each limit, and the limits (per minute). */
  limits: Array<{ name: string; per: number; of(u: Usage): number }>;
}

/**
 * Limits per deployment: Azure's default ratio (6 RPM per 1 000 TPM) on the OpenAI-shaped kinds;
 * small enough that a row stays a few hundred calls.
 */
const TPM = 30_000;
const RPM = (TPM * 6) / 1000;
const GPT_MAX_TOKENS = 256;
const CLAUDE = { rpm: 500, itpm: 15_000, otpm: 4_000, maxTokens: 1024 };
/** A PTU's output weight (gpt-4.1 counts an output token as 4 input tokens). */
const PTU_WEIGHT = 4;

const KINDS: Record<RuleKind, Kind> = {
  'azure-10s': azureKind("Azure standard, requests per 10 s (rpm / 6, Azure's default)", '10s'),
  'azure-1s': azureKind('Azure standard, requests per 1 s (rpm / 60)', '1s'),
  openai: {
    title: "OpenAI's token buckets (requests and tokens refill continuously)",
    provider: 'openai',
    model: 'gpt-4o-mini',
    maxTokens: GPT_MAX_TOKENS,
    upstream: { rules: 'openai', tpm: TPM, rpm: RPM },
    config: { name: 'gpt-4o-mini', tpm: TPM, rpm: RPM },
    callsPerMinute: (p) => Math.min(RPM, TPM / (p + GPT_MAX_TOKENS)),
    limits: [
      { name: 'TPM', per: TPM, of: (u) => u.input + GPT_MAX_TOKENS },
      { name: 'RPM', per: RPM, of: () => 1 },
    ],
  },
  anthropic: {
    title:
      `Anthropic / Claude on Foundry (RPM ${CLAUDE.rpm}, ITPM ${CLAUDE.itpm}, OTPM ` +
      `${CLAUDE.otpm} buckets; max_tokens ${CLAUDE.maxTokens}, ${COMPLETION} produced)`,
    provider: 'anthropic',
    model: 'claude-sonnet-5',
    maxTokens: CLAUDE.maxTokens,
    upstream: { rpm: CLAUDE.rpm, itpm: CLAUDE.itpm, otpm: CLAUDE.otpm },
    config: { name: 'claude-sonnet-5', rpm: CLAUDE.rpm, itpm: CLAUDE.itpm, otpm: CLAUDE.otpm },
    callsPerMinute: (p) =>
      Math.min(CLAUDE.rpm, CLAUDE.itpm / p, CLAUDE.otpm / Math.min(COMPLETION, CLAUDE.maxTokens)),
    limits: [
      { name: 'ITPM', per: CLAUDE.itpm, of: (u) => u.input },
      { name: 'OTPM', per: CLAUDE.otpm, of: (u) => u.output },
      { name: 'RPM', per: CLAUDE.rpm, of: () => 1 },
    ],
  },
  'azure-ptu': {
    title:
      `Azure PTU (${TPM} input-equivalent tokens a minute, output x${PTU_WEIGHT}, admitted ` +
      `below 100 % utilization, no x-ratelimit-* headers)`,
    provider: 'openai',
    model: 'gpt-4.1',
    maxTokens: GPT_MAX_TOKENS,
    upstream: { rules: 'azure-ptu', tpm: TPM, outputWeight: PTU_WEIGHT },
    config: { name: 'gpt-4.1', tpm: TPM },
    extra: { provisioned: true, outputWeight: PTU_WEIGHT },
    // Utilization drains at the capacity and counts what calls really cost, not their caps.
    callsPerMinute: (p) => TPM / (p + COMPLETION * PTU_WEIGHT),
    // Cached input is free on a PTU: the prompts of a row share their start, so most is cached.
    limits: [{ name: 'PTU', per: TPM, of: (u) => u.input - u.cached + u.output * PTU_WEIGHT }],
  },
};

function azureKind(title: string, window: '10s' | '1s'): Kind {
  return {
    title,
    provider: 'openai',
    model: 'gpt-4o-mini',
    maxTokens: GPT_MAX_TOKENS,
    upstream: { tpm: TPM, rpm: RPM, requestWindow: window },
    // `requestWindow` is not configured: the switchboard is to learn it from the answers.
    config: { name: 'gpt-4o-mini', tpm: TPM, rpm: RPM },
    callsPerMinute: (p) => Math.min(RPM, TPM / (p + GPT_MAX_TOKENS)),
    limits: [
      { name: 'TPM', per: TPM, of: (u) => u.input + GPT_MAX_TOKENS },
      { name: 'RPM', per: RPM, of: () => 1 },
    ],
  };
}

/** One row of the matrix. */
export interface FidelityRow {
  kind: RuleKind;
  shape: LoadShape;
  queue: boolean;
  /** Which checkout's switchboard: `this` or `--against`. */
  side: string;
  /** Offered load over the measured minutes, as a share of the upstreams' capacity. */
  offered: number;
  calls: number;
  ok: number;
  /** Calls the switchboard failed itself without sending (no room, queue full or timed out). */
  heldBack: number;
  /** Calls that failed for the caller, held-back ones included (not those still waiting). */
  failed: number;
  /** Calls still in the queue when the row ended (failed by closing it, not counted above). */
  waiting: number;
  upstreamRequests: number;
  upstream429: number;
  /**
   * What the calls answered within the measured minutes counted against the binding limit, over
   * that limit times the deployments and the minutes: the share of the upstream's capacity used.
   */
  goodput: number;
  /** The limit that binds (the largest share). */
  bound: string;
  /** Steps where calls were still on their way after {@link SETTLE_LIMIT_MS} of real time. */
  stalls: number;
  /** Settings of the model the switchboard refused (an older checkout), so left out. */
  dropped?: string[];
}

export interface FidelityOptions {
  seed: number;
  /** Which kinds (default all). */
  kinds?: readonly RuleKind[];
  /** Which shapes (default all). */
  shapes?: readonly LoadShape[];
  /** Without and / or with a queue (default both). */
  queues?: readonly boolean[];
  /** Deployments of each row, each a simulated deployment with the kind's limits (default 2). */
  deployments?: number;
  /** Quota minutes before the measured ones, at the same load (default 1). */
  warmupMinutes?: number;
  /** Measured quota minutes (default 3). */
  minutes?: number;
  /** This checkout's `createSwitchboard`. */
  create: CreateSwitchboard;
  /** `--against`: another checkout's, run on the same rows. */
  against?: { label: string; create: CreateSwitchboard };
}

/** A clock the driver moves. */
class VirtualClock {
  constructor(public ms = 1_700_000_000_000) {}
  readonly now = (): number => this.ms;
}

/** The arrival times (virtual ms from the row's start) of a shape at `perMinute` calls. */
function arrivals(shape: LoadShape, perMinute: number, totalMs: number): number[] {
  const out: number[] = [];
  if (shape === 'burst') {
    const n = Math.round(perMinute);
    for (let minute = 0; minute * MINUTE < totalMs; minute++) {
      for (let i = 0; i < n; i++) out.push(minute * MINUTE);
    }
    return out;
  }
  const rate = perMinute * (shape === 'steady' ? 0.95 : 1.5);
  const gap = MINUTE / rate;
  for (let t = 0; t < totalMs; t += gap) out.push(t);
  return out;
}

/** The error a switchboard raises for a call it held back carries a `switchboard_*` code. */
function heldBack(error: unknown): boolean {
  const e = error as { status?: number; code?: unknown; error?: { code?: unknown } };
  const code = e?.code ?? e?.error?.code;
  return e?.status === 429 && typeof code === 'string' && code.startsWith('switchboard_');
}

async function runRow(o: {
  create: CreateSwitchboard;
  side: string;
  kind: RuleKind;
  shape: LoadShape;
  queue: boolean;
  seed: number;
  deployments: number;
  warmupMinutes: number;
  minutes: number;
  prompts: readonly number[];
  meanPrompt: number;
}): Promise<FidelityRow> {
  const kind = KINDS[o.kind];
  const clock = new VirtualClock();
  const names = Array.from({ length: o.deployments }, (_, n) => `${o.kind}-${n}`);
  const upstream = await SimulatedUpstream.start({
    clock: clock.now,
    deployments: names.map((name) => ({ name, completionTokens: COMPLETION, ...kind.upstream })),
  });
  const sims = names.map((name) => upstream.deployment(name));
  for (const sim of sims) sim.holdAnswers();
  const build = (extra: Record<string, unknown>): Switchboard => {
    const deployments: DeploymentConfig[] = names.map((name) => {
      const sim = upstream.deployment(name);
      return kind.provider === 'anthropic'
        ? {
            provider: 'anthropic',
            name,
            baseURL: sim.anthropicBaseURL,
            apiKey: 'bench',
            models: [{ ...kind.config, ...extra }],
          }
        : {
            provider: 'openai',
            name,
            baseURL: sim.openaiBaseURL,
            apiKey: 'bench',
            models: [{ ...kind.config, ...extra }],
          };
    });
    return o.create({
      deployments,
      clock: clock.now,
      random: seeded(o.seed),
      ratelimitWindow: MINUTE,
      logger: quietLogger(),
      ...(o.queue ? { queue: { maxWait: MINUTE, maxQueued: 10_000 } } : {}),
    });
  };
  let sb: Switchboard;
  let dropped: string[] | undefined;
  try {
    sb = build(kind.extra ?? {});
  } catch (error) {
    // An older checkout refuses settings it does not know: run it as a user of it would.
    if (!kind.extra) throw error;
    dropped = Object.keys(kind.extra);
    sb = build({});
  }

  const random = seeded(o.seed + 1);
  const latency = () => LATENCY.min + random() * (LATENCY.max - LATENCY.min);
  /** Per deployment: held answers given a due time so far, and those due times. */
  const assigned = sims.map(() => 0);
  const due: Array<{ sim: number; index: number; at: number }> = [];
  let released = 0;
  const assignDue = (): void => {
    sims.forEach((sim, d) => {
      while (assigned[d]! < sim.heldAnswers) {
        due.push({ sim: d, index: assigned[d]!, at: clock.ms + latency() });
        assigned[d]!++;
      }
    });
  };
  const heldOpen = (): number => sims.reduce((n, sim) => n + sim.heldAnswers, 0) - released;

  const measureFrom = clock.ms + o.warmupMinutes * MINUTE;
  const totalMs = (o.warmupMinutes + o.minutes) * MINUTE;
  const measureTo = clock.ms + totalMs;
  const perMinute = kind.callsPerMinute(o.meanPrompt) * o.deployments;
  const times = arrivals(o.shape, perMinute, totalMs);
  let calls = 0;
  let offeredInWindow = 0;
  let ok = 0;
  let failed = 0;
  let held = 0;
  let pending = 0;
  const counted = kind.limits.map(() => 0);
  const settled: Promise<void>[] = [];

  const launch = (i: number): void => {
    // Each prompt its own (its number first): no two share a cached prefix upstream.
    const content = `${i} ${'x'.repeat(o.prompts[i % o.prompts.length]!)}`;
    calls++;
    pending++;
    if (clock.ms >= measureFrom) offeredInWindow++;
    const call: Promise<Usage> =
      kind.provider === 'anthropic'
        ? sb.messages
            .create({
              model: kind.model,
              max_tokens: kind.maxTokens,
              messages: [{ role: 'user', content }],
            })
            .then((m: Anthropic.Message) => ({
              input: m.usage.input_tokens,
              output: m.usage.output_tokens,
              cached: m.usage.cache_read_input_tokens ?? 0,
            }))
        : sb.chat.completions
            .create({
              model: kind.model,
              max_tokens: kind.maxTokens,
              messages: [{ role: 'user', content }],
            })
            .then((c: OpenAI.ChatCompletion) => ({
              input: c.usage?.prompt_tokens ?? 0,
              output: c.usage?.completion_tokens ?? 0,
              cached: c.usage?.prompt_tokens_details?.cached_tokens ?? 0,
            }));
    settled.push(
      call
        .then(
          (usage) => {
            ok++;
            if (clock.ms >= measureFrom && clock.ms < measureTo) {
              kind.limits.forEach((limit, n) => (counted[n]! += limit.of(usage)));
            }
          },
          (error: unknown) => {
            failed++;
            if (heldBack(error)) held++;
          },
        )
        .finally(() => pending--),
    );
  };

  let stalls = 0;
  /**
   * Lets the calls on their way arrive: each is then queued, held upstream, or done. The event
   * loop turns at least once first, even when nothing is on its way: the queue serves its next
   * caller from `setImmediate`, and a loop of promises alone would move the clock past it.
   */
  const settle = async (): Promise<void> => {
    const started = performance.now();
    for (let spin = 0; ; spin++) {
      await new Promise<void>((resolve) =>
        spin < 100 ? setImmediate(resolve) : setTimeout(resolve, 1),
      );
      assignDue();
      const queued = sb.queue?.length(kind.model) ?? 0;
      if (pending === queued + heldOpen()) return;
      if (performance.now() - started > SETTLE_LIMIT_MS) {
        stalls++;
        return;
      }
    }
  };

  const t0 = clock.ms;
  let next = 0;
  for (let t = 0; t < totalMs; t += STEP) {
    clock.ms = t0 + t;
    // The queue's own timers run in real time: each step of the clock wakes it.
    if (o.queue) sb.queue?.kick(kind.model);
    while (next < times.length && times[next]! <= t) launch(next++);
    await settle();
    due.sort((a, b) => a.at - b.at);
    let answered = 0;
    while (due.length > 0 && due[0]!.at <= clock.ms) {
      const d = due.shift()!;
      sims[d.sim]!.releaseAnswer(d.index);
      released++;
      answered++;
    }
    if (answered > 0) await settle();
  }
  clock.ms = measureTo;
  // A queued call's `maxWait` runs in real time, which a row hardly spends: at 150 % the calls
  // that would have timed out are still waiting here. Closing fails them; they are counted apart.
  const waiting = sb.queue?.length(kind.model) ?? 0;
  for (const sim of sims) sim.releaseAll();
  await sb.close();
  await Promise.all(settled);
  let upstreamRequests = 0;
  let upstream429 = 0;
  for (const sim of sims) {
    upstreamRequests += sim.stats.requests;
    upstream429 += sim.stats.rateLimited;
  }
  await upstream.close();

  const shares = kind.limits.map(
    (limit, n) => counted[n]! / (limit.per * o.deployments * o.minutes),
  );
  const best = shares.indexOf(Math.max(...shares));
  return {
    kind: o.kind,
    shape: o.shape,
    queue: o.queue,
    side: o.side,
    offered: offeredInWindow / (perMinute * o.minutes),
    calls,
    ok,
    heldBack: held,
    failed: failed - waiting,
    waiting,
    upstreamRequests,
    upstream429,
    goodput: shares[best] ?? 0,
    bound: kind.limits[best]?.name ?? '-',
    stalls,
    ...(dropped ? { dropped } : {}),
  };
}

/**
 * Runs the matrix and prints one table per kind of upstream: a row per load shape and queue
 * setting, and with `against` that checkout's row beneath each.
 */
export async function fidelity(o: FidelityOptions): Promise<Record<string, unknown>> {
  const deployments = o.deployments ?? 2;
  const warmupMinutes = o.warmupMinutes ?? 1;
  const minutes = o.minutes ?? 3;
  const prompts = promptSizes(5_000, o.seed);
  const meanPrompt = mean(prompts.map((c) => Math.max(1, Math.ceil(c / 4))));
  const sides = [{ label: 'this', create: o.create }, ...(o.against ? [o.against] : [])];
  console.log(
    `${deployments} simulated deployments per kind, each enforcing its vendor's documented rules ` +
      `(src/testing/rules), and one switchboard configured with the limits a portal shows ` +
      `(nothing else: request windows, reservations and buckets are its to learn). Virtual time ` +
      `in ${STEP} ms steps shared by both; answers held ${LATENCY.min / 1000}-${LATENCY.max / 1000} ` +
      `s each (seeded), so they come back out of order. Prompts log-normal, mean ` +
      `${fixed(meanPrompt, 0)} tokens; ${COMPLETION} output tokens an answer. ${warmupMinutes} ` +
      `quota minute(s) of warm-up at the same load, then ${minutes} measured. "queue": queue ` +
      `{ maxWait: 60 s }; without it the switchboard fails fast when no deployment has room.\n` +
      `upstream 429s: of the whole row, warm-up included, over the upstream requests. goodput: ` +
      `what the calls answered in the measured minutes counted against the binding limit, as a ` +
      `share of that limit (a token bucket starts full, so a row can read a little above 100 %).`,
  );
  const rows: FidelityRow[] = [];
  const started = performance.now();
  for (const kind of o.kinds ?? RULE_KINDS) {
    const rs: FidelityRow[] = [];
    for (const shape of o.shapes ?? LOAD_SHAPES) {
      for (const queue of o.queues ?? [false, true]) {
        for (const side of sides) {
          rs.push(
            await runRow({
              create: side.create,
              side: side.label,
              kind,
              shape,
              queue,
              seed: o.seed,
              deployments,
              warmupMinutes,
              minutes,
              prompts,
              meanPrompt,
            }),
          );
        }
      }
    }
    rows.push(...rs);
    const perDeployment = KINDS[kind].callsPerMinute(meanPrompt);
    console.log(
      `\n${KINDS[kind].title}: capacity ${fixed(perDeployment * deployments, 1)} calls/min`,
    );
    console.log(
      table(
        [
          'load',
          'queue',
          ...(o.against ? ['switchboard'] : []),
          'calls',
          'upstream 429s',
          'held back',
          'failed for caller',
          'waiting at end',
          'goodput',
          'bound',
        ],
        rs.map((r) => [
          SHAPE_TITLES[r.shape],
          r.queue ? 'queue' : 'fail fast',
          ...(o.against ? [r.side === 'this' ? 'this' : o.against.label] : []),
          String(r.calls),
          `${r.upstream429} (${pct(r.upstream429 / Math.max(1, r.upstreamRequests), 1)})`,
          `${r.heldBack} (${pct(r.heldBack / r.calls, 1)})`,
          `${r.failed} (${pct(r.failed / r.calls, 1)})`,
          String(r.waiting),
          pct(r.goodput, 1),
          r.bound + (r.stalls > 0 ? ` (${r.stalls} stalls)` : '') + (r.dropped ? ' *' : ''),
        ]),
      ),
    );
    if (rs.some((r) => r.dropped)) {
      console.log(
        `* that switchboard refused ${rs.find((r) => r.dropped)!.dropped!.join(', ')}: run without`,
      );
    }
  }
  const seconds = (performance.now() - started) / 1000;
  return { deployments, warmupMinutes, minutes, meanPrompt, seconds, rows };
}

import type { SwitchboardOptions } from '../config/switchboard-options';
import type { ApiPromiseLike } from '../providers/adapter';
import type { TokenUsage } from '../quota/admission';
import type { ProviderErrors } from '../registry/deployment';
import { Switchboard } from '../switchboard';
import { seededRandom } from '../testing/seeded-random';
import type { DeploymentConfig, Provider } from '../types';
import { documentedRules } from './documented-rules';
import {
  replayAdapter,
  type ReplayBody,
  type ReplaySurface,
  type ReplayWorld,
} from './replay-adapter';
import { TrafficFileError } from './traffic-file.error';
import type { TrafficTrace } from './traffic-trace';
import type {
  TokenLimit,
  UpstreamCall,
  UpstreamQuota,
  UpstreamRules,
  UpstreamVerdict,
} from './upstream-rules';
import { VirtualTime } from './virtual-time';

/** Latency (ms) of a recorded call whose line has none. */
export const DEFAULT_LATENCY = 1_000;

/**
 * How one replay runs: how much faster the arrivals come, how much each model's quota grows,
 * against which upstream rules.
 *
 * @example
 * ```ts
 * const result = await replay(trace, options, { scale: 2, quota: new Map([['gpt-4o', 1.5]]) });
 * ```
 */
export interface ReplayOptions {
  /** Arrival rate multiplier: 2 replays the trace's calls in half the time. Default 1. */
  scale?: number;
  /** Per model, the factor its limits (tpm, rpm, itpm, otpm) are multiplied by; default 1. */
  quota?: ReadonlyMap<string, number>;
  /** The upstreams' quota rules; default {@link documentedRules}, the vendors' own. */
  rules?: UpstreamRules;
  /** Seed of the selector's random draws, for repeatable plans. Default 1. */
  seed?: number;
  /** How many time slices the series have. Default 120. */
  slices?: number;
  /**
   * Stop sending arrivals once a caller of every one of these models has failed (the calls in
   * flight still end): enough to know that a quota does not serve them. The result then covers
   * the calls that arrived ({@link ReplayResult.complete} false).
   */
  stopWhenFailed?: ReadonlySet<string>;
}

/** What one model on one deployment saw in a replay. */
export interface DeploymentOutcome {
  deployment: string;
  model: string;
  /** Attempts sent to it. */
  sent: number;
  /** Of those, refused by the upstream's quota. */
  upstream429s: number;
  /**
   * Tokens the upstream counted over what its token limit allows in the replay's span, for the
   * most used of its limits (Claude: input or output); 0 when unlimited.
   */
  utilization: number;
  /** Its token limits in this replay (after the quota factor); none = unlimited. */
  limits: readonly TokenLimit[];
  /** Per time slice: utilization, and the mean wait (ms) of the calls first sent there. */
  series: { utilization: number[]; waitMs: number[] };
}

/** What the callers (of one model, or of all) saw. */
export interface CallerOutcome {
  calls: number;
  /** Calls that failed for their callers, after queueing, failover and fallbacks. */
  failed: number;
  /** Wait (ms) before a call was first sent, or before it failed unsent. */
  waitP50Ms: number;
  waitP95Ms: number;
}

/**
 * The result of one replay.
 *
 * @example
 * ```ts
 * const { callers, deployments } = await replay(trace, options);
 * ```
 */
export interface ReplayResult {
  /** Calls replayed: all of the trace's, unless the replay stopped early. */
  calls: number;
  /** False when {@link ReplayOptions.stopWhenFailed} stopped it early. */
  complete: boolean;
  deployments: DeploymentOutcome[];
  callers: CallerOutcome;
  perModel: Record<string, CallerOutcome>;
  /** First arrival (epoch ms), the span (ms) utilization is measured over, a slice's length. */
  start: number;
  spanMs: number;
  sliceMs: number;
}

/** One model on one deployment: its upstream quota and what was counted there. */
interface Upstream {
  outcome: DeploymentOutcome;
  quota: UpstreamQuota;
  provider: Provider;
  errors: ProviderErrors;
  /** Tokens counted against each limit, in all and per time slice (limit k: from k * slices). */
  tokens: Float64Array;
  sliceTokens: Float64Array;
  sliceWait: Float64Array;
  sliceSent: Float64Array;
}

const SILENT = { log() {}, warn() {}, error() {}, debug() {} };

/**
 * Replays `trace` through a switchboard built from `options` (its selection, queue, lanes,
 * tenants, tiers and fallbacks, unchanged) in virtual time, without HTTP: every deployment's SDK
 * call is answered in process by the upstream rule model, after the latency the line recorded.
 *
 * @example
 * ```ts
 * const result = await replay(readTraffic('traffic.jsonl'), loadSwitchboardConfigFile('sb.yaml'));
 * ```
 */
export async function replay(
  trace: TrafficTrace,
  options: SwitchboardOptions,
  o: ReplayOptions = {},
): Promise<ReplayResult> {
  const scale = o.scale ?? 1;
  const rules = o.rules ?? documentedRules;
  const n = trace.count;
  const start = trace.t[0]!;
  const arrival = new Float64Array(n);
  for (let i = 0; i < n; i++) arrival[i] = start + (trace.t[i]! - start) / scale;
  const spanMs = Math.max(60_000, arrival[n - 1]! - start);
  const sliceMs = Math.max(1_000, Math.ceil(spanMs / (o.slices ?? 120)));
  const slices = Math.ceil(spanMs / sliceMs) + 1;
  const sliceOf = (at: number) => Math.min(slices - 1, Math.floor((at - start) / sliceMs));

  // A key is never sent in a replay: a deployment without one (its token comes from code, as
  // Entra ID's does) is planned as configured.
  const deployments = options.deployments.map((d) =>
    withQuota({ ...d, apiKey: d.apiKey ?? 'unused' }, o.quota),
  );
  const providerOf = new Map<string, Provider>();
  for (const d of deployments) for (const m of d.models) providerOf.set(m.name, d.provider);
  const unknown = trace.models.filter((m) => !providerOf.has(m));
  if (unknown.length > 0) {
    throw new TrafficFileError(
      'the configuration',
      0,
      `no deployment serves ${unknown.map((m) => `'${m}'`).join(', ')}, which the traffic calls`,
    );
  }

  const time = new VirtualTime(start);
  const firstSent = new Float64Array(n).fill(-1);
  const ended = new Float64Array(n).fill(-1);
  const failed = new Uint8Array(n);
  // Per SDK client (one per deployment), its models' upstreams by model name.
  const upstreams = new Map<unknown, Map<string, Upstream>>();
  const call: UpstreamCall = { input: 0, cached: 0, output: 0, maxTokens: undefined };
  const callOf = (i: number): UpstreamCall => {
    call.input = trace.input[i]!;
    call.cached = trace.cached[i]!;
    call.output = trace.output[i]!;
    call.maxTokens = trace.maxTokens[i]! >= 0 ? trace.maxTokens[i]! : undefined;
    return call;
  };
  /** An admitted call's answer ends now: its quota settles it, and what it counted adds up. */
  const settle = (up: Upstream, verdict: UpstreamVerdict, output: number, slice: number) => {
    up.quota.settle(verdict, output, time.now);
    for (let k = 0; k < up.tokens.length; k++) {
      const counted = up.quota.counted(verdict, output, k);
      up.tokens[k] += counted;
      up.sliceTokens[k * slices + slice] += counted;
    }
  };
  const world: ReplayWorld = {
    admission: (i, defaultOutput) => {
      const input = trace.input[i]!;
      const output = trace.maxTokens[i]! >= 0 ? trace.maxTokens[i]! : defaultOutput;
      // No cap: the deployment charges its own reservation (`outputReservation`), as live.
      return output > 0 ? { input, output } : { input, output, uncapped: 1 };
    },
    send: (client, model, i) => {
      const up = upstreams.get(client)!.get(model)!;
      const now = time.now;
      const slice = sliceOf(now);
      up.outcome.sent++;
      if (firstSent[i]! < 0) {
        firstSent[i] = now;
        up.sliceWait[slice] += now - arrival[i]!;
        up.sliceSent[slice]++;
      }
      const c = callOf(i);
      const verdict = up.quota.admit(c, now);
      if (!verdict.admitted) {
        up.outcome.upstream429s++;
        const headers = new Headers();
        for (const [name, value] of Object.entries(verdict.headers))
          headers.set(name, String(value));
        const error = verdict.error ?? { message: 'Rate limit exceeded' };
        return answered(
          Promise.reject(new up.errors.RateLimitError(429, error, error.message, headers)),
        );
      }
      const output = c.output;
      // As the provider's SDK reports it: Anthropic's input_tokens leave the cache reads out.
      const usage: TokenUsage = {
        input: up.provider === 'anthropic' ? c.input - c.cached : c.input,
        output,
      };
      if (c.cached > 0) usage.cacheRead = c.cached;
      const latency = trace.latency[i]! >= 0 ? trace.latency[i]! : DEFAULT_LATENCY;
      return answered(
        new Promise((resolve) =>
          time.after(latency, () => {
            settle(up, verdict, output, slice);
            resolve({
              response: { headers: new ReadOnlyHeaders(verdict.headers) } as unknown as Response,
              data: { usage },
            });
          }),
        ),
      );
    },
  };
  const adapters = {
    openai: replayAdapter('openai', world),
    anthropic: replayAdapter('anthropic', world),
  };
  const sb = new Switchboard({
    ...options,
    deployments,
    recordTraffic: undefined,
    clock: time.clock,
    random: seededRandom(o.seed ?? 1),
    logger: SILENT,
    adapters: [adapters.openai, adapters.anthropic],
  });
  let settled = 0;
  let next = 0;
  const stackTraceLimit = Error.stackTraceLimit;
  try {
    sb.start();
    // The members of a quota pool draw on one quota, as the upstream counts them.
    const pools = new Map<string, UpstreamQuota>();
    for (const config of deployments) {
      const d = sb.deployments.get(config.name)!;
      const models = new Map<string, Upstream>();
      for (const m of config.models) {
        let quota = m.quotaPool === undefined ? undefined : pools.get(m.quotaPool);
        if (quota === undefined) {
          quota = rules.quotaFor(config, m);
          if (m.quotaPool !== undefined) pools.set(m.quotaPool, quota);
        }
        models.set(m.name, {
          outcome: {
            deployment: config.name,
            model: m.name,
            sent: 0,
            upstream429s: 0,
            utilization: 0,
            limits: quota.limits,
            series: { utilization: [], waitMs: [] },
          },
          quota,
          provider: config.provider,
          errors: d.errors,
          tokens: new Float64Array(quota.limits.length),
          sliceTokens: new Float64Array(slices * quota.limits.length),
          sliceWait: new Float64Array(slices),
          sliceSent: new Float64Array(slices),
        });
      }
      upstreams.set(d.client, models);
    }
    const surfaces: Record<Provider, ReplaySurface> = {
      openai: sb.surface(adapters.openai),
      anthropic: sb.surface(adapters.anthropic),
    };
    const byModel = trace.models.map((m) => surfaces[providerOf.get(m)!]);
    const tenants = trace.tenants.map((t) => (t === '' ? undefined : t));
    const stopWhen = o.stopWhenFailed;
    const failedModels = new Set<number>();
    let stopped = false;
    // The replay's errors are its data (429s, calls that waited in vain), made by the thousand:
    // their stack traces would cost more than the routing.
    Error.stackTraceLimit = 0;
    await time.run(
      () => (next < n && !stopped ? arrival[next]! : Infinity),
      () => {
        const i = next++;
        const m = trace.model[i]!;
        const body: ReplayBody = {
          model: trace.models[m]!,
          replay: i,
          lane: trace.lane[i] === 1 ? 'batch' : 'interactive',
          tenant: tenants[trace.tenant[i]!],
        };
        byModel[m]!.create(body).then(
          () => {
            ended[i] = time.now;
            settled++;
          },
          () => {
            ended[i] = time.now;
            failed[i] = 1;
            settled++;
            if (stopWhen?.has(trace.models[m]!) && !failedModels.has(m)) {
              failedModels.add(m);
              stopped = failedModels.size >= stopWhen.size;
            }
          },
        );
      },
    );
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
    await sb.close();
  }
  if (settled !== next) {
    throw new Error(`The replay ended with ${next - settled} calls unsettled`);
  }

  // Only the calls that arrived, when the replay stopped early.
  const arrived = next;
  const waits = new Float64Array(arrived);
  for (let i = 0; i < arrived; i++) {
    waits[i] = Math.max(0, (firstSent[i]! >= 0 ? firstSent[i]! : ended[i]!) - arrival[i]!);
  }
  const perModel: Record<string, CallerOutcome> = {};
  trace.models.forEach((name, m) => {
    const mine: number[] = [];
    let bad = 0;
    for (let i = 0; i < arrived; i++) {
      if (trace.model[i] !== m) continue;
      mine.push(waits[i]!);
      bad += failed[i]!;
    }
    perModel[name] = callerOutcome(Float64Array.from(mine), bad);
  });
  let failures = 0;
  for (let i = 0; i < arrived; i++) failures += failed[i]!;
  const outcomes: DeploymentOutcome[] = [];
  for (const models of upstreams.values()) {
    for (const up of models.values()) {
      const { outcome } = up;
      const limits = outcome.limits;
      // Of each limit, the share used; the most used one is the deployment's utilization.
      const used = (tokens: number, k: number, ms: number) =>
        tokens / ((limits[k]!.perMinute / 60_000) * ms);
      outcome.utilization = 0;
      for (let k = 0; k < limits.length; k++) {
        outcome.utilization = Math.max(outcome.utilization, used(up.tokens[k]!, k, spanMs));
      }
      const sliceUse = new Array<number>(slices).fill(0);
      for (let k = 0; k < limits.length; k++) {
        for (let s = 0; s < slices; s++) {
          sliceUse[s] = Math.max(sliceUse[s]!, used(up.sliceTokens[k * slices + s]!, k, sliceMs));
        }
      }
      outcome.series = {
        utilization: sliceUse,
        waitMs: Array.from(up.sliceWait, (w, s) =>
          up.sliceSent[s]! > 0 ? w / up.sliceSent[s]! : 0,
        ),
      };
      outcomes.push(outcome);
    }
  }
  return {
    calls: next,
    complete: next === n,
    deployments: outcomes,
    callers: callerOutcome(waits, failures),
    perModel,
    start,
    spanMs,
    sliceMs,
  };
}

/** The SDK-like promise of a replayed answer: its head and data come together. */
class ReplayedAnswer {
  constructor(readonly responsePromise: Promise<{ response: Response; data: unknown }>) {}

  asResponse(): Promise<Response> {
    return this.responsePromise.then((r) => r.response);
  }

  then<A = unknown, B = never>(
    onData?: ((data: unknown) => A | PromiseLike<A>) | null,
    onFailure?: ((error: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.responsePromise.then(
      onData ? (r) => onData(r.data) : undefined,
      onFailure,
    ) as Promise<A | B>;
  }
}

function answered(done: Promise<{ response: Response; data: unknown }>): ApiPromiseLike<unknown> {
  return new ReplayedAnswer(done) as ApiPromiseLike<unknown>;
}

/**
 * The headers of an answer, as far as the switchboard reads them (`get`, `has`): a `Headers`
 * object validates and copies every value, which a million answers pay for in seconds.
 */
class ReadOnlyHeaders {
  constructor(private readonly values: Readonly<Record<string, string | number>>) {}

  get(name: string): string | null {
    const value = this.values[name.toLowerCase()];
    return value === undefined ? null : String(value);
  }

  has(name: string): boolean {
    return this.values[name.toLowerCase()] !== undefined;
  }
}

/** `d` with every model's limits multiplied by its factor in `quota`. */
function withQuota(
  d: DeploymentConfig,
  quota: ReadonlyMap<string, number> | undefined,
): DeploymentConfig {
  return {
    ...d,
    models: d.models.map((m) => {
      const k = quota?.get(m.name) ?? 1;
      if (k === 1) return m;
      const times = (v: number | undefined) =>
        v === undefined || v === 0 ? v : Math.max(1, Math.round(v * k));
      return {
        ...m,
        tpm: times(m.tpm),
        rpm: times(m.rpm),
        itpm: times(m.itpm),
        otpm: times(m.otpm),
      };
    }),
  } as DeploymentConfig;
}

function callerOutcome(waits: Float64Array, failed: number): CallerOutcome {
  const sorted = Float64Array.from(waits).sort();
  return {
    calls: waits.length,
    failed,
    waitP50Ms: Math.round(quantile(sorted, 0.5)),
    waitP95Ms: Math.round(quantile(sorted, 0.95)),
  };
}

/** The q-quantile of ascending `xs` (nearest rank); 0 when empty. */
function quantile(xs: Float64Array, q: number): number {
  if (xs.length === 0) return 0;
  return xs[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)]!;
}

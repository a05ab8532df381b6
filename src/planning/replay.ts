import type { SwitchboardOptions } from '../config/switchboard-options';
import type { TokenUsage } from '../quota/admission';
import { Switchboard } from '../switchboard';
import { seededRandom } from '../testing/seeded-random';
import type { DeploymentConfig, Provider } from '../types';
import { documentedRules } from './documented-rules';
import { answered, ReadOnlyHeaders } from './replay-answers';
import { callerOutcome, deploymentOutcomes, perModelOutcomes } from './replay-outcomes';
import type { ReplayOptions, ReplayResult, Upstream } from './replay-types';
import {
  replayAdapter,
  type ReplayBody,
  type ReplaySurface,
  type ReplayWorld,
} from './replay-adapter';
import { TrafficFileError } from './traffic-file.error';
import type { TrafficTrace } from './traffic-trace';
import type { UpstreamCall, UpstreamQuota, UpstreamVerdict } from './upstream-rules';
import { VirtualTime } from './virtual-time';

/** Latency (ms) of a recorded call whose line has none. */
const DEFAULT_LATENCY = 1_000;

export type { ReplayOptions, ReplayResult } from './replay-types';

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
  // Computed where read, not kept: a week of calls is millions of them.
  const arrivalOf = (i: number) => start + (trace.t[i]! - start) / scale;
  const spanMs = Math.max(60_000, arrivalOf(n - 1) - start);
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
        up.sliceWait[slice] += now - arrivalOf(i);
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
      () => (next < n && !stopped ? arrivalOf(next) : Infinity),
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

  // Only the calls that arrived, when the replay stopped early; firstSent becomes their waits.
  const arrived = next;
  const waits = firstSent.subarray(0, arrived);
  for (let i = 0; i < arrived; i++) {
    waits[i] = Math.max(0, (waits[i]! >= 0 ? waits[i]! : ended[i]!) - arrivalOf(i));
  }
  const perModel = perModelOutcomes(trace, waits, failed);
  let failures = 0;
  for (let i = 0; i < arrived; i++) failures += failed[i]!;
  const outcomes = deploymentOutcomes(upstreams.values(), { slices, spanMs, sliceMs });
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

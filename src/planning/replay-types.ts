import type { ProviderErrors } from '../registry/deployment';
import type { Provider } from '../types';
import type { TokenLimit, UpstreamQuota, UpstreamRules } from './upstream-rules';

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
export interface Upstream {
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

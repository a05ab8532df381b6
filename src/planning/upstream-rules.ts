import type { DeploymentConfig, ModelConfig } from '../types';

/**
 * One call as an upstream's quota sees it: the prompt (`input`, with the part read from the
 * prompt cache in `cached`), the output it produced, and its output cap.
 *
 * @example
 * ```ts
 * const call: UpstreamCall = { input: 1_000, cached: 0, output: 200, maxTokens: 300 };
 * ```
 */
export interface UpstreamCall {
  input: number;
  cached: number;
  output: number;
  maxTokens: number | undefined;
}

/** The limit a refused call hit: requests, a combined token limit, input or output tokens. */
type UpstreamLimitHit = 'requests' | 'tokens' | 'input_tokens' | 'output_tokens';

/**
 * What the upstream's quota answered a call: admitted or refused (a 429, with when to retry,
 * which limit and the upstream's own words), and the rate-limit headers its answer carries.
 *
 * @example
 * ```ts
 * const refused: UpstreamVerdict = {
 *   admitted: false,
 *   retryAfterMs: 4_000,
 *   limit: 'tokens',
 *   error: { message: 'Requests ... have exceeded token rate limit ...' },
 *   headers: { 'x-ratelimit-remaining-tokens': 0, 'retry-after': 4 },
 * };
 * ```
 */
export interface UpstreamVerdict {
  admitted: boolean;
  /** For a refused call: when the upstream says to retry (ms). */
  retryAfterMs: number;
  /** The rate-limit headers of the answer (or of the 429, retry headers included), lower-case names. */
  headers: Readonly<Record<string, string | number>>;
  /** For a refused call: the limit it hit. */
  limit?: UpstreamLimitHit;
  /** For a refused call: the error object of the 429's body, as the upstream words it. */
  error?: { message: string; type?: string };
  /** For an admitted call: what the quota needs back when its answer ends (see `settle`). */
  charge?: unknown;
}

/**
 * A token limit of a quota, what utilization is measured against: `tpm` (a combined limit, or a
 * PTU's input-equivalent capacity), `itpm` and `otpm` (Claude's input and output limits).
 *
 * @example
 * ```ts
 * const limit: TokenLimit = { name: 'otpm', perMinute: 8_000 };
 * ```
 */
export interface TokenLimit {
  name: 'tpm' | 'itpm' | 'otpm';
  perMinute: number;
}

/**
 * The quota of one model on one deployment, as its upstream enforces it, on the replay's clock:
 * every method takes the replay's virtual time as `now`.
 *
 * @example
 * ```ts
 * const verdict = quota.admit({ input: 1_000, cached: 0, output: 200, maxTokens: 300 }, now);
 * if (verdict.admitted) quota.settle(verdict, 200, now + 900);
 * ```
 */
export interface UpstreamQuota {
  /** Admits (and charges) or refuses a call arriving at `now` (epoch ms). */
  admit(call: UpstreamCall, now: number): UpstreamVerdict;
  /** The answer to the admitted `verdict` ended at `now`, having produced `output` tokens. */
  settle(verdict: UpstreamVerdict, output: number, now: number): void;
  /** The token limits it enforces (none: unlimited), what utilization is measured against. */
  readonly limits: readonly TokenLimit[];
  /** Tokens the admitted `verdict`, whose answer produced `output`, counted against `limits[k]`. */
  counted(verdict: UpstreamVerdict, output: number, k: number): number;
}

/**
 * The upstream rule model a plan replays against: for each model on each deployment, a quota that
 * admits or refuses calls as the upstream does. The one seam between the planner and the vendors'
 * rules; the default is {@link documentedRules} (`./documented-rules`), the rules each vendor
 * documents.
 *
 * @example
 * ```ts
 * const rules: UpstreamRules = { quotaFor: (deployment, model) => myQuota(deployment, model) };
 * await plan(trace, options, { rules });
 * ```
 */
export interface UpstreamRules {
  quotaFor(deployment: DeploymentConfig, model: ModelConfig): UpstreamQuota;
}

import type { ModelConfig, Provider } from '../types';

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

/**
 * What the upstream's quota answered a call: admitted or refused (a 429, with when to retry), and
 * the rate-limit headers its answer carries.
 *
 * @example
 * ```ts
 * const refused: UpstreamVerdict = { admitted: false, retryAfterMs: 4_000, headers: { 'x-ratelimit-remaining-tokens': '0' } };
 * ```
 */
export interface UpstreamVerdict {
  admitted: boolean;
  /** For a refused call: when the upstream says to retry (ms). */
  retryAfterMs: number;
  /** The rate-limit headers of the answer (or of the 429), lower-case names. */
  headers: Record<string, string>;
}

/**
 * The quota of one model on one deployment, as its upstream enforces it, on the replay's clock.
 *
 * @example
 * ```ts
 * const verdict = quota.admit({ input: 1_000, cached: 0, output: 200, maxTokens: 300 }, now);
 * ```
 */
export interface UpstreamQuota {
  /** Admit (and count) or refuse a call arriving at `now` (epoch ms). */
  admit(call: UpstreamCall, now: number): UpstreamVerdict;
  /** The call admitted at `admittedAt` ended at `now` (for limits that count actual output). */
  ended?(call: UpstreamCall, admittedAt: number, now: number): void;
  /** Tokens per minute the quota allows: what utilization is measured against (0: unlimited). */
  readonly tokensPerMinute: number;
  /** How many tokens `call` counts against {@link tokensPerMinute}. */
  counted(call: UpstreamCall): number;
}

/**
 * The upstream rule model a plan replays against: for each model on each deployment, a quota that
 * admits or refuses calls as the upstream does. The one seam between the planner and the vendors'
 * rules: a more faithful rule set (token buckets, Claude's input and output limits, PTU) replaces
 * {@link azureStandardRules} without touching the replay.
 *
 * @example
 * ```ts
 * const rules: UpstreamRules = { quotaFor: (deployment, provider, model) => myQuota(model) };
 * await plan(trace, options, { rules });
 * ```
 */
export interface UpstreamRules {
  quotaFor(deployment: string, provider: Provider, model: ModelConfig): UpstreamQuota;
}

/** Azure: 6 requests per minute come with every 1 000 tokens per minute of a standard deployment. */
const RPM_PER_1000_TPM = 6;
const BUCKET_MS = 1_000;
const TOKEN_WINDOW_MS = 60_000;
const REQUEST_WINDOW_MS = 10_000;

/**
 * Azure OpenAI standard (pay-as-you-go) deployments, from Microsoft's "Azure OpenAI quotas and
 * limits" and "Manage Azure OpenAI quota" documents:
 * - a request counts its prompt plus its `max_tokens` (or `max_completion_tokens`) against TPM at
 *   admission, estimated up front and kept for the minute, whatever it produces; a request
 *   without a cap counts its actual output;
 * - TPM is enforced over the last minute; RPM (`rpm`, else 6 per 1 000 TPM) over 10-second
 *   periods, rpm / 6 per period;
 * - a refused request gets a 429 with `retry-after`, and answers carry
 *   `x-ratelimit-remaining-tokens` / `-requests`.
 * Counted in 1-second buckets. Applied to every deployment of a plan (Claude's and PTU rules
 * belong to a faithful rule set behind the same {@link UpstreamRules} seam).
 *
 * @example
 * ```ts
 * const quota = azureStandardRules.quotaFor('east', 'openai', { name: 'gpt-4o', tpm: 30_000 });
 * ```
 */
export const azureStandardRules: UpstreamRules = {
  quotaFor: (_deployment, _provider, model) => {
    const tpm = model.tpm ?? 0;
    const rpm = model.rpm ?? Math.floor((tpm / 1000) * RPM_PER_1000_TPM);
    return new SlidingQuota(tpm, rpm);
  },
};

/** Counts over trailing windows of whole buckets: tokens over a minute, requests over 10 s. */
class SlidingQuota implements UpstreamQuota {
  private readonly tokens = new Float64Array(TOKEN_WINDOW_MS / BUCKET_MS);
  private readonly requests = new Float64Array(REQUEST_WINDOW_MS / BUCKET_MS);
  /** The bucket number (ms / BUCKET_MS) of the newest bucket written. */
  private head = -1;
  private tokenSum = 0;
  private requestSum = 0;
  private readonly requestsPer10s: number;

  constructor(
    readonly tokensPerMinute: number,
    private readonly rpm: number,
  ) {
    this.requestsPer10s = rpm > 0 ? Math.max(1, Math.floor(rpm / 6)) : 0;
  }

  counted(call: UpstreamCall): number {
    return call.input + (call.maxTokens ?? call.output);
  }

  admit(call: UpstreamCall, now: number): UpstreamVerdict {
    this.roll(Math.floor(now / BUCKET_MS));
    const cost = this.counted(call);
    const tpm = this.tokensPerMinute;
    let wait = 0;
    if (tpm > 0 && this.tokenSum + cost > tpm) {
      wait = this.freedAfter(this.tokens, this.tokenSum + cost - tpm, now);
    }
    const perPeriod = this.requestsPer10s;
    if (perPeriod > 0 && this.requestSum + 1 > perPeriod) {
      wait = Math.max(wait, this.freedAfter(this.requests, 1, now));
    }
    if (wait > 0) return { admitted: false, retryAfterMs: wait, headers: this.headers() };
    const slot = this.head;
    this.tokens[slot % this.tokens.length] += cost;
    this.requests[slot % this.requests.length] += 1;
    this.tokenSum += cost;
    this.requestSum += 1;
    return { admitted: true, retryAfterMs: 0, headers: this.headers() };
  }

  private headers(): Record<string, string> {
    const h: Record<string, string> = {};
    if (this.tokensPerMinute > 0) {
      h['x-ratelimit-limit-tokens'] = String(this.tokensPerMinute);
      h['x-ratelimit-remaining-tokens'] = String(Math.max(0, this.tokensPerMinute - this.tokenSum));
    }
    if (this.rpm > 0) {
      h['x-ratelimit-limit-requests'] = String(this.rpm);
      h['x-ratelimit-remaining-requests'] = String(
        Math.max(0, this.requestsPer10s - this.requestSum),
      );
    }
    return h;
  }

  /** Moves the windows on to bucket `bucket`, forgetting what left them. */
  private roll(bucket: number): void {
    if (bucket <= this.head) return;
    const steps = this.head < 0 ? Infinity : bucket - this.head;
    this.tokenSum -= clearAhead(this.tokens, this.head, steps);
    this.requestSum -= clearAhead(this.requests, this.head, steps);
    this.head = bucket;
  }

  /** Ms from `now` until `excess` of a window's count has left it (oldest bucket first). */
  private freedAfter(window: Float64Array, excess: number, now: number): number {
    const n = window.length;
    let freed = 0;
    for (let age = n - 1; age >= 0; age--) {
      freed += window[(this.head - age + n) % n]!;
      // Bucket b leaves the window when bucket b + n begins.
      if (freed >= excess) return Math.max(1, (this.head - age + n) * BUCKET_MS - now);
    }
    // More than the window ever holds: the call never fits.
    return n * BUCKET_MS;
  }
}

/** Clears the `steps` buckets after `head` (all of them when steps >= length); returns their sum. */
function clearAhead(window: Float64Array, head: number, steps: number): number {
  const n = window.length;
  let gone = 0;
  const count = Math.min(n, steps);
  for (let i = 1; i <= count; i++) {
    const at = (((head + i) % n) + n) % n;
    gone += window[at]!;
    window[at] = 0;
  }
  return gone;
}

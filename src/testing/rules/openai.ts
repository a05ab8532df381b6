/**
 * OpenAI's own API, as its "Rate limits" guide (platform.openai.com/docs/guides/rate-limits)
 * describes it:
 *
 * - requests and tokens per minute, each a bucket that refills continuously ("full again at");
 * - a request is charged at admission its prompt tokens plus its output cap (the guide speaks of
 *   "the maximum of max_tokens and the estimated number of tokens"; measured answers show prompt
 *   plus `max_tokens` charged, which is what is enforced here); one that sets none is charged
 *   `inferredMaxTokens`;
 * - answers carry `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`: limits per minute,
 *   resets as durations (`1s`, `6m0s`, `20ms`) until the bucket is full again; a 429 carries
 *   `retry-after` in seconds;
 * - "rate limits can be quantized, meaning they are enforced over shorter periods of time (e.g.
 *   60,000 requests/minute may be enforced as 1,000 requests/second)": with `requestWindow`
 *   (`'1s'`, `'10s'`) the requests are also a bucket of that interval's share of `rpm`, refilled
 *   at the same pace; the headers still speak of the minute.
 */
import type { CompletionPlan } from '../wire/common';
import { MINUTE, shortBucket, TokenBucket } from './meters';
import {
  outputCap,
  plainDemand,
  secondsRetryHeaders,
  type Admission,
  type QuotaDemand,
  type QuotaSettings,
  type Refusal,
  type UpstreamRules,
} from './rule-set';

/**
 * A duration as OpenAI's reset headers write it: `20ms`, `1.5s`, `6m0s`.
 *
 * @example
 * ```ts
 * openaiDuration(360_000); // '6m0s'
 * ```
 */
export function openaiDuration(ms: number): string {
  const whole = Math.max(0, Math.ceil(ms));
  if (whole < 1_000) return `${whole}ms`;
  if (whole < MINUTE) return `${Math.round(whole) / 1000}s`;
  const minutes = Math.floor(whole / MINUTE);
  return `${minutes}m${Math.round(whole - minutes * MINUTE) / 1000}s`;
}

/**
 * OpenAI's rules for one deployment (project and model).
 *
 * @example
 * ```ts
 * const rules = new OpenAIRules(settings, 1);
 * rules.admit(rules.demand(plan), Date.now(), false);
 * ```
 */
export class OpenAIRules implements UpstreamRules {
  private readonly requests?: TokenBucket;
  private readonly tokens?: TokenBucket;
  /** The requests enforced over a shorter interval, when one is set. */
  private readonly shortRequests?: TokenBucket;

  constructor(
    private readonly settings: QuotaSettings,
    timeScale: number,
    requestWindowMs?: number,
  ) {
    const period = MINUTE / timeScale;
    if (settings.rpm > 0) this.requests = new TokenBucket(settings.rpm, period);
    this.shortRequests = shortBucket(settings.rpm, requestWindowMs, timeScale);
    if (settings.tpm > 0) this.tokens = new TokenBucket(settings.tpm, period);
  }

  demand(plan: CompletionPlan): QuotaDemand {
    const output = outputCap(plan, this.settings);
    return plainDemand(plan.promptTokens, output);
  }

  admit(demand: QuotaDemand, now: number, force: boolean): Admission {
    const refused = force ? undefined : this.refusal(demand, now);
    if (refused !== undefined) return refused;
    this.requests?.take(demand.requests, now);
    this.shortRequests?.take(demand.requests, now);
    this.tokens?.take(demand.tokens, now);
    return { ok: true, headers: this.headers(now), charge: { demand } };
  }

  refusal(demand: QuotaDemand, now: number): Refusal | undefined {
    const byRequests = Math.max(
      this.requests?.waitMs(demand.requests, now) ?? 0,
      this.shortRequests?.waitMs(demand.requests, now) ?? 0,
    );
    const byTokens = this.tokens?.waitMs(demand.tokens, now) ?? 0;
    if (byRequests > 0 || byTokens > 0) {
      const never = byTokens === Infinity;
      return {
        ok: false,
        reason: byTokens >= byRequests ? 'tokens' : 'requests',
        retryMs: never ? this.tokens!.periodMs : Math.max(byRequests, byTokens),
        never,
        headers: this.headers(now),
      };
    }
    return undefined;
  }

  settle(): void {
    // The admission charge stays: the bucket refills it.
  }

  headers(now: number): Record<string, string | number> {
    const headers: Record<string, string | number> = {};
    const put = (what: string, bucket: TokenBucket | undefined): void => {
      if (!bucket) return;
      headers[`x-ratelimit-limit-${what}`] = bucket.capacity;
      headers[`x-ratelimit-remaining-${what}`] = Math.max(0, Math.floor(bucket.available(now)));
      headers[`x-ratelimit-reset-${what}`] = openaiDuration(bucket.fullInMs(now));
    };
    put('requests', this.requests);
    put('tokens', this.tokens);
    return headers;
  }

  retryHeaders(retryMs: number): Record<string, number> {
    return secondsRetryHeaders(retryMs);
  }
}

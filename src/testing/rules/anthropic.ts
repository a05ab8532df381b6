/**
 * Anthropic's Messages API (and Claude on Foundry), as Anthropic's "Rate limits" page
 * (docs.anthropic.com/en/api/rate-limits) describes it:
 *
 * - requests, input tokens and output tokens per minute, each a token bucket: "capacity is
 *   continuously replenished up to your maximum limit, rather than being reset at fixed
 *   intervals";
 * - input tokens are uncached input plus cache writes: cache reads do not count toward ITPM;
 * - output tokens count what the answer produced: `max_tokens` does not factor into OTPM, so a
 *   request is refused on output only when the bucket is already empty;
 * - answers carry `anthropic-ratelimit-{requests,input-tokens,output-tokens,tokens}-{limit,
 *   remaining,reset}`, resets as RFC 3339 times when the bucket is full again; `tokens-*` is the
 *   most restrictive limit in effect: the sum of input and output, or a workspace's combined
 *   limit (`tpm` here); the `remaining` of tokens, input tokens and output tokens is "rounded to
 *   the nearest thousand" (so it may read up to 500 above what is left); a 429 carries
 *   `retry-after` in seconds;
 * - "your rate limit may be enforced over shorter time intervals. For example, a rate of 60
 *   requests per minute (RPM) may be enforced as 1 request per second": with `requestWindow`
 *   (`'1s'`, `'10s'`) the requests are also a bucket of that interval's share of `rpm`, refilled
 *   at the same pace; the headers still speak of the minute.
 */
import type { CompletionPlan } from '../wire/common';
import { MINUTE, shortBucket, TokenBucket } from './meters';
import {
  secondsRetryHeaders,
  type Admission,
  type QuotaCharge,
  type QuotaDemand,
  type QuotaSettings,
  type RefusalReason,
  type UpstreamRules,
} from './rule-set';

/**
 * Anthropic's rules for one deployment.
 *
 * @example
 * ```ts
 * const rules = new AnthropicRules(settings, 1);
 * const admission = rules.admit(rules.demand(plan), Date.now(), false);
 * ```
 */
export class AnthropicRules implements UpstreamRules {
  private readonly requests?: TokenBucket;
  private readonly input?: TokenBucket;
  private readonly output?: TokenBucket;
  /** A workspace's combined input + output limit, when one is set. */
  private readonly tokens?: TokenBucket;
  /** The requests enforced over a shorter interval, when one is set. */
  private readonly shortRequests?: TokenBucket;

  constructor(settings: QuotaSettings, timeScale: number, requestWindowMs?: number) {
    const period = MINUTE / timeScale;
    const bucket = (limit: number): TokenBucket | undefined =>
      limit > 0 ? new TokenBucket(limit, period) : undefined;
    this.requests = bucket(settings.rpm);
    this.shortRequests = shortBucket(settings.rpm, requestWindowMs, timeScale);
    this.input = bucket(settings.itpm);
    this.output = bucket(settings.otpm);
    this.tokens = bucket(settings.tpm);
  }

  demand(plan: CompletionPlan): QuotaDemand {
    const input = Math.max(0, plan.promptTokens - (plan.cacheReadTokens ?? 0));
    return { requests: 1, tokens: input, inputTokens: input, outputTokens: 0 };
  }

  admit(demand: QuotaDemand, now: number, force: boolean): Admission {
    // Output is charged when it is produced: an empty output bucket refuses until it refills.
    const checks: [RefusalReason, TokenBucket | undefined, number][] = [
      ['requests', this.requests, demand.requests],
      ['requests', this.shortRequests, demand.requests],
      ['input_tokens', this.input, demand.inputTokens],
      ['output_tokens', this.output, Math.max(demand.outputTokens, 1)],
      ['tokens', this.tokens, demand.tokens],
    ];
    let worst: { reason: RefusalReason; wait: number } | undefined;
    let never = false;
    for (const [reason, bucket, amount] of checks) {
      if (!bucket) continue;
      let wait = bucket.waitMs(amount, now);
      if (wait === Infinity) {
        never = true;
        wait = bucket.fullInMs(now) || bucket.periodMs;
      }
      if (wait > 0 && (!worst || wait > worst.wait)) worst = { reason, wait };
    }
    if (worst && !force) {
      return {
        ok: false,
        reason: worst.reason,
        retryMs: worst.wait,
        never,
        headers: this.headers(now),
      };
    }
    this.requests?.take(demand.requests, now);
    this.shortRequests?.take(demand.requests, now);
    this.input?.take(demand.inputTokens, now);
    this.tokens?.take(demand.tokens, now);
    return { ok: true, headers: this.headers(now), charge: { demand } };
  }

  settle(_charge: QuotaCharge, actualOutput: number, now: number): void {
    this.output?.take(actualOutput, now);
    this.tokens?.take(actualOutput, now);
  }

  headers(now: number): Record<string, string | number> {
    const headers: Record<string, string | number> = {};
    const reset = (ms: number): string => new Date(now + Math.ceil(ms)).toISOString();
    const put = (name: string, bucket: TokenBucket | undefined): void => {
      if (!bucket) return;
      const left = Math.max(0, Math.floor(bucket.available(now)));
      headers[`anthropic-ratelimit-${name}-limit`] = bucket.capacity;
      headers[`anthropic-ratelimit-${name}-remaining`] =
        name === 'requests' ? left : nearestThousand(left);
      headers[`anthropic-ratelimit-${name}-reset`] = reset(bucket.fullInMs(now));
    };
    put('requests', this.requests);
    put('input-tokens', this.input);
    put('output-tokens', this.output);
    const parts = this.tokens ? [this.tokens] : [this.input, this.output];
    const buckets = parts.filter((bucket): bucket is TokenBucket => bucket !== undefined);
    if (buckets.length > 0) {
      let limit = 0;
      let left = 0;
      let full = 0;
      for (const bucket of buckets) {
        limit += bucket.capacity;
        left += Math.max(0, bucket.available(now));
        full = Math.max(full, bucket.fullInMs(now));
      }
      headers['anthropic-ratelimit-tokens-limit'] = limit;
      headers['anthropic-ratelimit-tokens-remaining'] = nearestThousand(left);
      headers['anthropic-ratelimit-tokens-reset'] = reset(full);
    }
    return headers;
  }

  retryHeaders(retryMs: number): Record<string, number> {
    return secondsRetryHeaders(retryMs);
  }
}

/** A token count as Anthropic's `remaining` headers give it: rounded to the nearest thousand. */
function nearestThousand(tokens: number): number {
  return Math.round(tokens / 1000) * 1000;
}

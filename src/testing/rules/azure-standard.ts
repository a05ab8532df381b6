/**
 * Azure OpenAI standard (pay-as-you-go) deployments, as "Manage Azure OpenAI Service quota"
 * (learn.microsoft.com/azure/ai-services/openai/how-to/quota) describes them:
 *
 * - a request is charged at admission its prompt tokens plus its output cap (`max_tokens` /
 *   `max_completion_tokens` / `max_output_tokens`); one that sets none is charged a
 *   model-dependent default (`inferredMaxTokens` here); the charge is not given back;
 * - tokens are counted per minute, in a fixed window here;
 * - requests are evaluated over a short period, "typically 1 or 10 seconds": `rpm / 6` per 10 s
 *   (or `rpm / 60` per 1 s);
 * - answers carry `x-ratelimit-limit-requests` / `-remaining-requests` / `-reset-requests` of
 *   that short window (20 for 120 RPM, as measured), `x-ratelimit-*-tokens` of the minute, the
 *   resets in seconds; a 429 carries `retry-after` and `retry-after-ms`, what is remaining and
 *   when it resets, but no `x-ratelimit-limit-*` (as Microsoft's Azure OpenAI API simulator and
 *   measured 429s show), and says which limit it hit in its message: "exceeded call rate limit"
 *   for requests, "exceeded token rate limit" for tokens.
 */
import type { CompletionPlan } from '../wire/common';
import { FixedWindow, MINUTE, overWindows, seconds } from './meters';
import {
  azureRetryHeaders,
  outputCap,
  plainDemand,
  type Admission,
  type Refusal,
  type QuotaDemand,
  type QuotaSettings,
  type UpstreamRules,
} from './rule-set';

/**
 * Azure OpenAI's standard deployment rules for one deployment.
 *
 * @example
 * ```ts
 * const rules = new AzureStandardRules(settings, 10_000, 1);
 * rules.admit(rules.demand(plan), Date.now(), false);
 * ```
 */
export class AzureStandardRules implements UpstreamRules {
  private readonly requests: FixedWindow;
  private readonly tokens: FixedWindow;

  constructor(
    private readonly settings: QuotaSettings,
    private readonly requestWindowMs: number,
    timeScale: number,
  ) {
    this.requests = new FixedWindow(requestWindowMs / timeScale);
    this.tokens = new FixedWindow(MINUTE / timeScale);
  }

  demand(plan: CompletionPlan): QuotaDemand {
    const output = outputCap(plan, this.settings);
    return plainDemand(plan.promptTokens, output);
  }

  /** Requests allowed per short window: `rpm` scaled to it, at least 1 (0 = unlimited). */
  get requestLimit(): number {
    const rpm = this.settings.rpm;
    return rpm > 0 ? Math.max(1, Math.floor((rpm * this.requestWindowMs) / MINUTE)) : 0;
  }

  admit(demand: QuotaDemand, now: number, force: boolean): Admission {
    const refused = force ? undefined : this.refusal(demand, now);
    if (refused !== undefined) return refused;
    this.requests.roll(now);
    this.tokens.roll(now);
    this.requests.used += demand.requests;
    this.tokens.used += demand.tokens;
    return { ok: true, headers: this.headers(now), charge: { demand } };
  }

  refusal(demand: QuotaDemand, now: number): Refusal | undefined {
    const limits = { requests: this.requestLimit, tokens: this.settings.tpm };
    const over = overWindows({ requests: this.requests, tokens: this.tokens }, limits, demand, now);
    return over && { ok: false, ...over, headers: withoutLimits(this.headers(now)) };
  }

  settle(): void {
    // Azure keeps the admission charge for its minute, whatever the answer used.
  }

  headers(now: number): Record<string, string | number> {
    const headers: Record<string, string | number> = {};
    const requestLimit = this.requestLimit;
    if (requestLimit > 0) {
      headers['x-ratelimit-limit-requests'] = requestLimit;
      headers['x-ratelimit-remaining-requests'] = Math.max(
        0,
        requestLimit - this.requests.usedAt(now),
      );
      headers['x-ratelimit-reset-requests'] = seconds(this.requests.remainingMs(now));
    }
    const tpm = this.settings.tpm;
    if (tpm > 0) {
      headers['x-ratelimit-limit-tokens'] = tpm;
      headers['x-ratelimit-remaining-tokens'] = Math.max(0, tpm - this.tokens.usedAt(now));
      headers['x-ratelimit-reset-tokens'] = seconds(this.tokens.remainingMs(now));
    }
    return headers;
  }

  retryHeaders(retryMs: number): Record<string, number> {
    return azureRetryHeaders(retryMs);
  }
}

/** An answer's headers as a 429 carries them: without the `x-ratelimit-limit-*` ones. */
function withoutLimits(headers: Record<string, string | number>): Record<string, string | number> {
  delete headers['x-ratelimit-limit-requests'];
  delete headers['x-ratelimit-limit-tokens'];
  return headers;
}

/**
 * The simulator's first, friendlier model (`quota: 'friendly'`), kept for demos and older tests:
 * prompt plus actual completion (or plus `max_tokens` with `chargeMaxTokens`) in a fixed minute,
 * `rpm / 6` requests per 10 s, and only the two `x-ratelimit-remaining-*` headers. No vendor
 * documents it.
 */
import type { CompletionPlan } from '../wire/common';
import { FixedWindow, MINUTE, overWindows } from './meters';
import {
  azureRetryHeaders,
  plainDemand,
  type Admission,
  type QuotaDemand,
  type QuotaSettings,
  type UpstreamRules,
} from './rule-set';

/** Requests are limited per 10 s. */
const REQUEST_WINDOW = 10_000;

/**
 * The friendly rules for one deployment.
 *
 * @example
 * ```ts
 * const rules = new FriendlyRules(settings, 1);
 * ```
 */
export class FriendlyRules implements UpstreamRules {
  private readonly requests: FixedWindow;
  private readonly tokens: FixedWindow;

  constructor(
    private readonly settings: QuotaSettings,
    timeScale: number,
  ) {
    this.requests = new FixedWindow(REQUEST_WINDOW / timeScale);
    this.tokens = new FixedWindow(MINUTE / timeScale);
  }

  demand(plan: CompletionPlan): QuotaDemand {
    const output =
      this.settings.chargeMaxTokens && plan.maxTokens !== undefined
        ? plan.maxTokens
        : plan.completionTokens;
    return plainDemand(plan.promptTokens, output);
  }

  private get requestLimit(): number {
    const rpm = this.settings.rpm;
    return rpm > 0 ? Math.max(1, Math.floor((rpm * REQUEST_WINDOW) / MINUTE)) : 0;
  }

  admit(demand: QuotaDemand, now: number, force: boolean): Admission {
    const limits = { requests: this.requestLimit, tokens: this.settings.tpm };
    const over = overWindows({ requests: this.requests, tokens: this.tokens }, limits, demand, now);
    if (!force && over) return { ok: false, ...over, headers: this.headers(now) };
    this.requests.used += demand.requests;
    this.tokens.used += demand.tokens;
    return { ok: true, headers: this.headers(now), charge: { demand } };
  }

  settle(): void {
    // The charge was the actual usage already.
  }

  headers(now: number): Record<string, string | number> {
    const headers: Record<string, string | number> = {};
    const requestLimit = this.requestLimit;
    if (requestLimit > 0) {
      headers['x-ratelimit-remaining-requests'] = Math.max(
        0,
        requestLimit - this.requests.usedAt(now),
      );
    }
    const tpm = this.settings.tpm;
    if (tpm > 0) {
      headers['x-ratelimit-remaining-tokens'] = Math.max(0, tpm - this.tokens.usedAt(now));
    }
    return headers;
  }

  retryHeaders(retryMs: number): Record<string, number> {
    return azureRetryHeaders(retryMs);
  }
}

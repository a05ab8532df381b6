/**
 * Quotas of a simulated deployment: fixed windows for requests and tokens, and the admission
 * decision with the rate-limit headers it reports.
 */
import type { CompletionPlan } from './wire/common';

/** A fixed quota window that starts with the first request after the previous one expired. */
export class QuotaWindow {
  private start = -Infinity;
  used = 0;

  constructor(private readonly lengthMs: number) {}

  roll(now: number): void {
    if (now >= this.start + this.lengthMs || now < this.start) {
      this.start = now;
      this.used = 0;
    }
  }

  remainingMs(now: number): number {
    return Math.max(0, this.start + this.lengthMs - now);
  }

  reset(): void {
    this.start = -Infinity;
    this.used = 0;
  }
}

/** The limits and windows one admission decision reads (internal). */
export interface QuotaState {
  rpm: number;
  tpm: number;
  chargeMaxTokens: boolean;
  requestWindow: QuotaWindow;
  tokenWindow: QuotaWindow;
}

/** Outcome of {@link admit}: the headers to send, and on refusal the reason and the wait. */
export type Admission =
  | { ok: true; headers: Record<string, string | number> }
  | {
      ok: false;
      reason: 'requests' | 'tokens';
      retryMs: number;
      headers: Record<string, string | number>;
    };

/**
 * Admits `plan` when it fits both windows, charging one request and its tokens (prompt +
 * completion, or prompt + `max_tokens` with `chargeMaxTokens`).
 */
export function admit(quota: QuotaState, plan: CompletionPlan, now: number): Admission {
  const requestLimit = quota.rpm > 0 ? Math.max(1, Math.floor(quota.rpm / 6)) : 0;
  const tokenLimit = quota.tpm > 0 ? quota.tpm : 0;
  const charge =
    plan.promptTokens +
    (quota.chargeMaxTokens && plan.maxTokens !== undefined
      ? plan.maxTokens
      : plan.completionTokens);
  quota.requestWindow.roll(now);
  quota.tokenWindow.roll(now);
  const overRequests = requestLimit > 0 && quota.requestWindow.used + 1 > requestLimit;
  const overTokens = tokenLimit > 0 && quota.tokenWindow.used + charge > tokenLimit;
  const headers = (): Record<string, string | number> => ({
    ...(requestLimit > 0
      ? { 'x-ratelimit-remaining-requests': Math.max(0, requestLimit - quota.requestWindow.used) }
      : {}),
    ...(tokenLimit > 0
      ? { 'x-ratelimit-remaining-tokens': Math.max(0, tokenLimit - quota.tokenWindow.used) }
      : {}),
  });
  if (overRequests || overTokens) {
    return {
      ok: false,
      reason: overTokens ? 'tokens' : 'requests',
      retryMs: Math.max(
        overRequests ? quota.requestWindow.remainingMs(now) : 0,
        overTokens ? quota.tokenWindow.remainingMs(now) : 0,
      ),
      headers: headers(),
    };
  }
  quota.requestWindow.used += 1;
  quota.tokenWindow.used += charge;
  return { ok: true, headers: headers() };
}

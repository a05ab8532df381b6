/**
 * Quotas of a simulated deployment, as the services document them.
 *
 * - **Azure OpenAI** (`/openai/` routes): a request is charged at admission its prompt tokens plus
 *   its output cap (`max_completion_tokens` / `max_tokens` / `max_output_tokens`, or the
 *   deployment's `inferredMaxTokens` when it sets none; embeddings: the input only). The charge
 *   stays in its fixed one-minute window, whatever the answer turns out to use. Requests are
 *   limited to `rpm / 6` per 10 s window (or `rpm / 60` per 1 s).
 * - **Claude on Foundry** (`/anthropic/` routes): token buckets that refill continuously over a
 *   minute, for requests, input tokens (uncached input + cache writes; cache reads are free) and
 *   output tokens (reserved from `max_tokens` at admission, adjusted to the actual output when the
 *   answer ends), plus an optional combined token bucket.
 * - **Friendly** (`quota: 'friendly'`): the simulator's first model, prompt + actual completion
 *   (or + `max_tokens` with `chargeMaxTokens`) in a fixed minute, `rpm / 6` per 10 s.
 *
 * Every window is divided by the deployment's `timeScale`.
 */
import type { CompletionPlan } from './wire/common';

const MINUTE = 60_000;

/** A fixed quota window that starts with the first charge after the previous one expired. */
export class FixedWindow {
  private start = -Infinity;
  used = 0;

  constructor(readonly lengthMs: number) {}

  roll(now: number): void {
    if (now >= this.start + this.lengthMs || now < this.start) {
      this.start = now;
      this.used = 0;
    }
  }

  /** Usage of the window open at `now` (0 when it has expired). */
  usedAt(now: number): number {
    return now >= this.start + this.lengthMs || now < this.start ? 0 : this.used;
  }

  /** Milliseconds until the current window ends (0 when none is open). */
  remainingMs(now: number): number {
    return Math.max(0, this.start + this.lengthMs - now);
  }

  reset(): void {
    this.start = -Infinity;
    this.used = 0;
  }
}

/**
 * A token bucket of `capacity` that refills at `capacity` per `periodMs`, continuously (how
 * Anthropic enforces its limits): usage frees up gradually instead of at a window boundary.
 */
export class TokenBucket {
  private level: number;
  private at = -Infinity;

  constructor(
    readonly capacity: number,
    readonly periodMs: number,
  ) {
    this.level = capacity;
  }

  /** Units available at `now`. */
  available(now: number): number {
    this.refill(now);
    return this.level;
  }

  /** Takes `amount` (may go below zero when forced). */
  take(amount: number, now: number): void {
    this.refill(now);
    this.level -= amount;
  }

  /** Gives `amount` back, never above capacity. */
  give(amount: number, now: number): void {
    this.refill(now);
    this.level = Math.min(this.capacity, this.level + amount);
  }

  /** Milliseconds until `amount` is available (Infinity above capacity). */
  waitMs(amount: number, now: number): number {
    const missing = amount - this.available(now);
    if (missing <= 0) return 0;
    if (amount > this.capacity) return Infinity;
    return (missing / this.capacity) * this.periodMs;
  }

  /** Milliseconds until the bucket is full again. */
  fullInMs(now: number): number {
    return ((this.capacity - this.available(now)) / this.capacity) * this.periodMs;
  }

  reset(): void {
    this.level = this.capacity;
    this.at = -Infinity;
  }

  private refill(now: number): void {
    if (this.at === -Infinity || now < this.at) {
      this.at = now;
      return;
    }
    this.level = Math.min(
      this.capacity,
      this.level + ((now - this.at) / this.periodMs) * this.capacity,
    );
    this.at = now;
  }
}

/** The quota settings of a deployment that admission reads (mutable at run time). */
export interface QuotaSettings {
  quota: 'faithful' | 'friendly';
  rpm: number;
  tpm: number;
  itpm: number;
  otpm: number;
  inferredMaxTokens: number;
  chargeMaxTokens: boolean;
}

/** What one request asks of the quotas. */
export interface QuotaDemand {
  requests: number;
  /** Azure and friendly: tokens charged at admission. */
  tokens: number;
  /** Anthropic: input tokens charged (uncached input + cache writes). */
  inputTokens: number;
  /** Anthropic: output tokens reserved. */
  outputTokens: number;
}

/** A charge that was admitted, to settle when the answer ends. */
export interface QuotaCharge {
  family: QuotaFamily;
  demand: QuotaDemand;
}

/** The result of an admission: headers for the answer, and on refusal the reason and the wait. */
export type Admission =
  | { ok: true; headers: Record<string, string | number>; charge: QuotaCharge }
  | {
      ok: false;
      reason: 'requests' | 'tokens' | 'input_tokens' | 'output_tokens';
      /** Milliseconds until the request would fit, or until usage frees up when it never can. */
      retryMs: number;
      /** The demand exceeds the limit itself: no wait makes it fit. */
      never: boolean;
      headers: Record<string, string | number>;
    };

/** Which rules apply: the wire family of the route. */
export type QuotaFamily = 'openai' | 'anthropic';

/** The demand `plan` makes under `settings` for `family`. */
export function demandOf(
  plan: CompletionPlan,
  family: QuotaFamily,
  settings: QuotaSettings,
): QuotaDemand {
  const cacheRead = plan.cacheReadTokens ?? 0;
  if (settings.quota === 'friendly') {
    const output =
      settings.chargeMaxTokens && plan.maxTokens !== undefined
        ? plan.maxTokens
        : plan.completionTokens;
    return {
      requests: 1,
      tokens: plan.promptTokens + output,
      inputTokens: plan.promptTokens,
      outputTokens: output,
    };
  }
  const output = plan.api === 'embeddings' ? 0 : (plan.maxTokens ?? settings.inferredMaxTokens);
  const input =
    family === 'anthropic' ? Math.max(0, plan.promptTokens - cacheRead) : plan.promptTokens;
  return { requests: 1, tokens: input + output, inputTokens: input, outputTokens: output };
}

/** Seconds as the `reset` headers give them: up to millisecond precision, no trailing zeros. */
const seconds = (ms: number): number => Math.round(Math.max(0, ms)) / 1000;

/**
 * The quota state of one deployment: Azure-style fixed windows for `/openai/` routes, Anthropic
 * token buckets for `/anthropic/` routes (each family keeps its own, as two real deployments
 * would), rebuilt when a limit changes at run time.
 */
export class DeploymentQuota {
  private azure?: {
    key: string;
    requests: FixedWindow;
    tokens: FixedWindow;
    /** Requests of the current minute, for the per-minute headers. */
    minute: FixedWindow;
  };
  private anthropic?: {
    key: string;
    requests?: TokenBucket;
    input?: TokenBucket;
    output?: TokenBucket;
    tokens?: TokenBucket;
  };

  constructor(
    private readonly settings: () => QuotaSettings,
    private readonly timeScale: number,
    private readonly requestWindowMs: number,
  ) {}

  /** Forgets all usage. */
  reset(): void {
    this.azure = undefined;
    this.anthropic = undefined;
  }

  /**
   * Admits `demand` when it fits, charging it; `force` charges it even when it does not fit
   * (usage by another application that the simulator does not refuse).
   */
  admit(family: QuotaFamily, demand: QuotaDemand, now: number, force = false): Admission {
    return family === 'anthropic' && this.settings().quota === 'faithful'
      ? this.admitAnthropic(demand, now, force)
      : this.admitWindows(demand, now, force);
  }

  /** Ends an admitted charge: Anthropic gives back the output reserved but not used. */
  settle(charge: QuotaCharge, actualOutputTokens: number, now: number): void {
    if (charge.family !== 'anthropic' || this.settings().quota !== 'faithful') return;
    const state = this.anthropicState();
    const unused = Math.max(0, charge.demand.outputTokens - actualOutputTokens);
    if (unused === 0) return;
    state.output?.give(unused, now);
    state.tokens?.give(unused, now);
  }

  /** The rate-limit headers of an answer of `family` now, without charging anything. */
  headers(family: QuotaFamily, now: number): Record<string, string | number> {
    return family === 'anthropic' && this.settings().quota === 'faithful'
      ? this.anthropicHeaders(now)
      : this.windowHeaders(now);
  }

  private windowState(): NonNullable<DeploymentQuota['azure']> {
    const s = this.settings();
    const key = `${s.rpm}/${s.tpm}/${s.quota}`;
    if (this.azure?.key !== key) {
      this.azure = {
        key,
        requests: new FixedWindow(
          (s.quota === 'friendly' ? 10_000 : this.requestWindowMs) / this.timeScale,
        ),
        tokens: new FixedWindow(MINUTE / this.timeScale),
        minute: new FixedWindow(MINUTE / this.timeScale),
      };
    }
    return this.azure;
  }

  private requestLimit(): number {
    const s = this.settings();
    if (!(s.rpm > 0)) return 0;
    const windowMs = s.quota === 'friendly' ? 10_000 : this.requestWindowMs;
    return Math.max(1, Math.floor((s.rpm * windowMs) / MINUTE));
  }

  private admitWindows(demand: QuotaDemand, now: number, force: boolean): Admission {
    const s = this.settings();
    const state = this.windowState();
    const requestLimit = this.requestLimit();
    const tokenLimit = s.tpm > 0 ? s.tpm : 0;
    state.requests.roll(now);
    state.tokens.roll(now);
    state.minute.roll(now);
    const overRequests = requestLimit > 0 && state.requests.used + demand.requests > requestLimit;
    const overTokens = tokenLimit > 0 && state.tokens.used + demand.tokens > tokenLimit;
    if (!force && (overRequests || overTokens)) {
      return {
        ok: false,
        reason: overTokens ? 'tokens' : 'requests',
        retryMs: Math.max(
          overRequests ? state.requests.remainingMs(now) : 0,
          overTokens ? state.tokens.remainingMs(now) : 0,
        ),
        never: tokenLimit > 0 && demand.tokens > tokenLimit,
        headers: this.windowHeaders(now),
      };
    }
    state.requests.used += demand.requests;
    state.tokens.used += demand.tokens;
    state.minute.used += demand.requests;
    return { ok: true, headers: this.windowHeaders(now), charge: { family: 'openai', demand } };
  }

  private windowHeaders(now: number): Record<string, string | number> {
    const s = this.settings();
    const state = this.windowState();
    const requestLimit = this.requestLimit();
    const headers: Record<string, string | number> = {};
    if (s.quota === 'friendly') {
      if (requestLimit > 0) {
        headers['x-ratelimit-remaining-requests'] = Math.max(
          0,
          requestLimit - state.requests.usedAt(now),
        );
      }
      if (s.tpm > 0)
        headers['x-ratelimit-remaining-tokens'] = Math.max(0, s.tpm - state.tokens.usedAt(now));
      return headers;
    }
    // Per minute, like the deployment's quota: the short request window is enforced, not shown.
    if (s.rpm > 0) {
      headers['x-ratelimit-limit-requests'] = s.rpm;
      headers['x-ratelimit-remaining-requests'] = Math.max(0, s.rpm - state.minute.usedAt(now));
      headers['x-ratelimit-reset-requests'] = seconds(state.minute.remainingMs(now));
    }
    if (s.tpm > 0) {
      headers['x-ratelimit-limit-tokens'] = s.tpm;
      headers['x-ratelimit-remaining-tokens'] = Math.max(0, s.tpm - state.tokens.usedAt(now));
      headers['x-ratelimit-reset-tokens'] = seconds(state.tokens.remainingMs(now));
    }
    return headers;
  }

  private anthropicState(): NonNullable<DeploymentQuota['anthropic']> {
    const s = this.settings();
    const key = `${s.rpm}/${s.itpm}/${s.otpm}/${s.tpm}`;
    if (this.anthropic?.key !== key) {
      const period = MINUTE / this.timeScale;
      const bucket = (limit: number): TokenBucket | undefined =>
        limit > 0 ? new TokenBucket(limit, period) : undefined;
      this.anthropic = {
        key,
        requests: bucket(s.rpm),
        input: bucket(s.itpm),
        output: bucket(s.otpm),
        tokens: bucket(s.tpm),
      };
    }
    return this.anthropic;
  }

  private admitAnthropic(demand: QuotaDemand, now: number, force: boolean): Admission {
    const state = this.anthropicState();
    const checks: [Exclude<Admission, { ok: true }>['reason'], TokenBucket | undefined, number][] =
      [
        ['requests', state.requests, demand.requests],
        ['input_tokens', state.input, demand.inputTokens],
        ['output_tokens', state.output, demand.outputTokens],
        ['tokens', state.tokens, demand.inputTokens + demand.outputTokens],
      ];
    let worst: { reason: Exclude<Admission, { ok: true }>['reason']; wait: number } | undefined;
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
        headers: this.anthropicHeaders(now),
      };
    }
    for (const [, bucket, amount] of checks) bucket?.take(amount, now);
    return {
      ok: true,
      headers: this.anthropicHeaders(now),
      charge: { family: 'anthropic', demand },
    };
  }

  private anthropicHeaders(now: number): Record<string, string | number> {
    const state = this.anthropicState();
    const headers: Record<string, string | number> = {};
    const put = (name: string, bucket: TokenBucket | undefined): void => {
      if (!bucket) return;
      headers[`anthropic-ratelimit-${name}-limit`] = bucket.capacity;
      headers[`anthropic-ratelimit-${name}-remaining`] = Math.max(
        0,
        Math.floor(bucket.available(now)),
      );
      headers[`anthropic-ratelimit-${name}-reset`] = new Date(
        now + Math.ceil(bucket.fullInMs(now)),
      ).toISOString();
    };
    put('requests', state.requests);
    put('input-tokens', state.input);
    put('output-tokens', state.output);
    // `tokens-*`: the most restrictive token limit in effect (the combined one when configured).
    const tokenBuckets = [state.tokens, state.input, state.output].filter(
      (bucket): bucket is TokenBucket => bucket !== undefined,
    );
    const tightest =
      state.tokens ?? tokenBuckets.sort((a, b) => a.available(now) - b.available(now))[0];
    if (tightest) {
      headers['anthropic-ratelimit-tokens-limit'] = tightest.capacity;
      headers['anthropic-ratelimit-tokens-remaining'] = Math.max(
        0,
        Math.floor(tightest.available(now)),
      );
      headers['anthropic-ratelimit-tokens-reset'] = new Date(
        now + Math.ceil(tightest.fullInMs(now)),
      ).toISOString();
    }
    return headers;
  }
}

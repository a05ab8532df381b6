import type { CompletionPlan } from '../wire/common';

/**
 * The kinds of upstream whose documented rules a simulated deployment can enforce on its OpenAI
 * routes (`/openai/`): Azure OpenAI standard deployments (the default), Azure provisioned (PTU)
 * deployments, and OpenAI's own API. Anthropic routes always follow Anthropic's rules.
 */
export type OpenAIRulesKind = 'azure' | 'azure-ptu' | 'openai';

/** The settings of a deployment that the rules read (mutable at run time). */
export interface QuotaSettings {
  quota: 'faithful' | 'friendly';
  rpm: number;
  tpm: number;
  itpm: number;
  otpm: number;
  inferredMaxTokens: number;
  chargeMaxTokens: boolean;
  /** Which rules the OpenAI routes follow (default `azure`). */
  rules?: OpenAIRulesKind;
  /** Azure PTU: output tokens count this many input-equivalent tokens (default 1). */
  outputWeight?: number;
}

/** What one request asks of the quotas. */
export interface QuotaDemand {
  requests: number;
  /** Tokens charged at admission against a combined token limit. */
  tokens: number;
  /** Input tokens charged (Anthropic: uncached input + cache writes). */
  inputTokens: number;
  /** Output tokens charged at admission (0 where only actual output counts). */
  outputTokens: number;
}

/** A charge that was admitted, to settle when the answer ends. */
export interface QuotaCharge {
  demand: QuotaDemand;
}

/** Why a request was refused. */
export type RefusalReason = 'requests' | 'tokens' | 'input_tokens' | 'output_tokens';

/** The result of an admission: headers for the answer, and on refusal the reason and the wait. */
export type Admission =
  | { ok: true; headers: Record<string, string | number>; charge: QuotaCharge }
  | {
      ok: false;
      reason: RefusalReason;
      /** Milliseconds until the request would fit, or until usage frees up when it never can. */
      retryMs: number;
      /** The demand exceeds the limit itself: no wait makes it fit. */
      never: boolean;
      headers: Record<string, string | number>;
    };

/** An admission refused. */
export type Refusal = Extract<Admission, { ok: false }>;

/**
 * One upstream's documented rate-limit rules, for one deployment: what a request is charged,
 * when it is admitted, what its answer settles, and the headers answers carry. Each kind is
 * written directly from its vendor's document (see docs/quota-counters.md).
 *
 * @example
 * ```ts
 * const demand = rules.demand(plan);
 * const admission = rules.admit(demand, now, false);
 * if (admission.ok) rules.settle(admission.charge, plan.completionTokens, later);
 * ```
 */
export interface UpstreamRules {
  /** What `plan` asks of the quotas. */
  demand(plan: CompletionPlan): QuotaDemand;
  /** Admits `demand` when it fits, charging it; `force` charges it even when it does not. */
  admit(demand: QuotaDemand, now: number, force: boolean): Admission;
  /**
   * Why `demand` would be refused now, without charging it (`undefined`: it fits); the rules a
   * level of a quota pool path can follow have it.
   */
  refusal?(demand: QuotaDemand, now: number): Refusal | undefined;
  /** The answer to an admitted charge ended with `actualOutput` tokens. */
  settle(charge: QuotaCharge, actualOutput: number, now: number): void;
  /** The rate-limit headers of an answer at `now`, without charging anything. */
  headers(now: number): Record<string, string | number>;
  /** The retry headers of a 429 that frees up in `retryMs`. */
  retryHeaders(retryMs: number): Record<string, number>;
}

/** `retry-after` in whole seconds (at least 1), and `retry-after-ms`: what Azure sends. */
export function azureRetryHeaders(retryMs: number): Record<string, number> {
  return {
    'retry-after': Math.max(1, Math.ceil(retryMs / 1000)),
    'retry-after-ms': Math.max(1, Math.ceil(retryMs)),
  };
}

/** `retry-after` in whole seconds only (at least 1): what Anthropic and OpenAI send. */
export function secondsRetryHeaders(retryMs: number): Record<string, number> {
  return { 'retry-after': Math.max(1, Math.ceil(retryMs / 1000)) };
}

/**
 * One request of `input` prompt tokens and `output` output tokens, both counted as tokens: the
 * demand of a rule that prices input and output alike.
 *
 * @example
 * ```ts
 * plainDemand(120, 256); // { requests: 1, tokens: 376, inputTokens: 120, outputTokens: 256 }
 * ```
 */
export function plainDemand(input: number, output: number): QuotaDemand {
  return { requests: 1, tokens: input + output, inputTokens: input, outputTokens: output };
}

/** The output cap a request charges at admission: its own, or the deployment's inferred one. */
export function outputCap(plan: CompletionPlan, settings: QuotaSettings): number {
  return plan.api === 'embeddings' ? 0 : (plan.maxTokens ?? settings.inferredMaxTokens);
}

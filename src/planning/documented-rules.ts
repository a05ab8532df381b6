/*
 * The planner's upstreams follow the rules each vendor documents, as the simulated deployments of
 * `nestjs-switchboard/testing` enforce them (`src/testing/rules/`, tables and sources in
 * docs/quota-counters.md): the rule sets are those classes, chosen as a simulated deployment
 * chooses them, on the replay's clock. This file only translates a recorded call into what they
 * read, and their answers into a 429 or an answer's headers.
 */
import { DEFAULT_OUTPUT_RESERVATION } from '../quota/quota-ledger';
import { upstreamKind, type UpstreamKind } from '../quota/upstream-kind';
import { DeploymentQuota, type QuotaFamily } from '../testing/quota';
import type {
  QuotaCharge,
  QuotaSettings,
  RefusalReason,
  UpstreamRules as RuleSet,
} from '../testing/rules/rule-set';
import type { CompletionPlan } from '../testing/wire/common';
import type { DeploymentConfig, ModelConfig } from '../types';
import type {
  TokenLimit,
  UpstreamCall,
  UpstreamQuota,
  UpstreamRules,
  UpstreamVerdict,
} from './upstream-rules';

/**
 * The kind of upstream whose rules a model on a deployment follows: Azure OpenAI standard or
 * provisioned (`provisioned: true`), OpenAI's own API, Anthropic's (Claude on Foundry).
 *
 * @example
 * ```ts
 * const kind: RuleKind = 'azure-ptu';
 * ```
 */
type RuleKind = UpstreamKind | 'azure-ptu';

/**
 * Which rules `model` on `deployment` follows: the kind of upstream its provider and `baseURL`
 * name (as the switchboard's own quota tells them apart), provisioned on Azure when the model
 * says so.
 *
 * @example
 * ```ts
 * ruleKindOf({ provider: 'openai', name: 'ptu', baseURL: 'https://x.openai.azure.com/openai/v1/', apiKey: 'k', models: [] },
 *   { name: 'gpt-4.1', tpm: 60_000, provisioned: true }); // 'azure-ptu'
 * ```
 */
export function ruleKindOf(deployment: DeploymentConfig, model: ModelConfig): RuleKind {
  const kind = upstreamKind(deployment.provider, deployment.baseURL);
  return kind === 'azure' && model.provisioned === true ? 'azure-ptu' : kind;
}

/** Azure assigns 6 requests per minute with every 1 000 tokens per minute of standard quota ([Q]). */
const AZURE_RPM_PER_1000_TPM = 6;

/**
 * The rules the vendors document (docs/quota-counters.md), one rule set per model on each
 * deployment, by its kind of upstream ({@link ruleKindOf}):
 * - Azure OpenAI standard: prompt + `max_tokens` (uncapped: `outputReservation`, else Azure's
 *   default) per fixed minute, kept whatever the answer used; `rpm` (else 6 per 1 000 TPM) over
 *   `requestWindow` (default 10 s); the short window's request headers;
 * - Azure PTU: admitted while utilization is below 100 %, cached input free, output times
 *   `outputWeight`, corrected to the actual output; no rate-limit headers;
 * - OpenAI: `rpm` and `tpm` buckets refilled continuously, prompt + `max_tokens` charged;
 * - Anthropic: `rpm`, `itpm` (uncached input: cache reads are free unless the model sets
 *   `cacheReadsCountInput`) and `otpm` (actual output) buckets, and `tpm` as a combined limit;
 *   its `tokens-*` headers the sum, rounded down to thousands.
 *
 * @example
 * ```ts
 * const quota = documentedRules.quotaFor(deployment, deployment.models[0]!);
 * const verdict = quota.admit({ input: 1_000, cached: 0, output: 200, maxTokens: 300 }, now);
 * ```
 */
export const documentedRules: UpstreamRules = {
  quotaFor: (deployment, model) => new DocumentedQuota(ruleKindOf(deployment, model), model),
};

/** What a token limit counts of an admitted call, by kind of upstream. */
type Counts = 'charge' | 'ptu' | 'input' | 'output' | 'sum';

/** The words of an upstream's 429 per limit, for the switchboard to read as it reads the real ones. */
const LIMIT_WORDS: Readonly<Record<RefusalReason, string>> = {
  requests: 'requests',
  tokens: 'tokens',
  input_tokens: 'input tokens',
  output_tokens: 'output tokens',
};

class DocumentedQuota implements UpstreamQuota {
  readonly limits: TokenLimit[] = [];
  private readonly counts: Counts[] = [];
  private readonly rules: RuleSet;
  private readonly family: QuotaFamily;
  /** One plan, rewritten for each call: the rule sets read its sizes only. */
  private readonly plan: CompletionPlan;
  private readonly cacheReadsFree: boolean;
  private readonly weight: number;

  constructor(
    private readonly kind: RuleKind,
    private readonly model: ModelConfig,
  ) {
    const tpm = model.tpm ?? 0;
    const settings: QuotaSettings = {
      quota: 'faithful',
      rpm: model.rpm ?? (kind === 'azure' ? Math.floor((tpm / 1000) * AZURE_RPM_PER_1000_TPM) : 0),
      tpm,
      itpm: model.itpm ?? 0,
      otpm: model.otpm ?? 0,
      inferredMaxTokens:
        model.outputReservation ??
        DEFAULT_OUTPUT_RESERVATION[kind === 'azure-ptu' ? 'azure' : kind],
      chargeMaxTokens: false,
      rules: kind === 'anthropic' ? undefined : kind,
      outputWeight: model.outputWeight ?? 1,
    };
    this.weight = settings.outputWeight!;
    this.family = kind === 'anthropic' ? 'anthropic' : 'openai';
    // The rule set a simulated deployment with these settings enforces; its limits stay put
    // for the replay, so it is taken once.
    this.rules = new DeploymentQuota(
      () => settings,
      1,
      model.requestWindow === '1s' ? 1_000 : 10_000,
    ).rules(this.family);
    this.cacheReadsFree = kind === 'azure-ptu' || model.cacheReadsCountInput !== true;
    const limit = (name: TokenLimit['name'], perMinute: number, counts: Counts) => {
      if (perMinute <= 0) return;
      this.limits.push({ name, perMinute });
      this.counts.push(counts);
    };
    if (kind === 'anthropic') {
      limit('itpm', settings.itpm, 'input');
      limit('otpm', settings.otpm, 'output');
      limit('tpm', tpm, 'sum');
    } else {
      limit('tpm', tpm, kind === 'azure-ptu' ? 'ptu' : 'charge');
    }
    this.plan = {
      api: this.family === 'anthropic' ? 'messages' : 'chat',
      model: model.name,
      stream: false,
      includeUsage: false,
      text: '',
      promptTokens: 0,
      completionTokens: 0,
      truncated: false,
      maxTokens: undefined,
      cacheReadTokens: 0,
    };
  }

  admit(call: UpstreamCall, now: number): UpstreamVerdict {
    const plan = this.plan;
    plan.promptTokens = call.input;
    plan.completionTokens = call.output;
    plan.maxTokens = call.maxTokens;
    plan.cacheReadTokens = this.cacheReadsFree ? call.cached : 0;
    const demand = this.rules.demand(plan);
    const admission = this.rules.admit(demand, now, false);
    if (admission.ok) {
      return {
        admitted: true,
        retryAfterMs: 0,
        headers: admission.headers,
        charge: admission.charge,
      };
    }
    const retryMs = admission.retryMs;
    return {
      admitted: false,
      retryAfterMs: retryMs,
      headers: { ...admission.headers, ...this.rules.retryHeaders(retryMs) },
      limit: admission.reason,
      error: this.refusal(admission.reason, retryMs),
    };
  }

  settle(verdict: UpstreamVerdict, output: number, now: number): void {
    this.rules.settle(verdict.charge as QuotaCharge, output, now);
  }

  counted(verdict: UpstreamVerdict, output: number, k: number): number {
    const demand = (verdict.charge as QuotaCharge).demand;
    switch (this.counts[k]) {
      case 'charge':
        return demand.tokens;
      case 'ptu':
        // The rule gives back the unused part of the output cap, at its weight.
        return demand.tokens - Math.max(0, demand.outputTokens - output) * this.weight;
      case 'input':
        return demand.inputTokens;
      case 'output':
        return output;
      default:
        return demand.tokens + output;
    }
  }

  /** The 429's error object, worded as the upstream words it (the switchboard reads the words). */
  private refusal(reason: RefusalReason, retryMs: number): { message: string; type?: string } {
    const seconds = Math.max(1, Math.ceil(retryMs / 1000));
    const words = LIMIT_WORDS[reason];
    switch (this.kind) {
      case 'anthropic':
        return {
          type: 'rate_limit_error',
          message: `This request would exceed your organization's rate limit of ${words} per minute for ${this.model.name}. Please retry after ${seconds} seconds.`,
        };
      case 'openai':
        return {
          type: reason === 'requests' ? 'requests' : 'tokens',
          message: `Rate limit reached for ${this.model.name} on ${reason === 'requests' ? 'requests per min (RPM)' : 'tokens per min (TPM)'}. Please try again in ${seconds}s.`,
        };
      default:
        // Azure's words: "call rate limit" for requests, "token rate limit" for tokens.
        return {
          message: `Requests to the ChatCompletions_Create Operation have exceeded ${reason === 'requests' ? 'call' : 'token'} rate limit of your current pricing tier. Please retry after ${seconds} seconds.`,
        };
    }
  }
}

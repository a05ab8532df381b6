/**
 * The quotas of a simulated deployment: which upstream's documented rules apply to a route
 * (`rules/`, one file per kind of upstream), each kept apart per route family as two real
 * deployments would, and rebuilt when a limit changes at run time.
 *
 * - OpenAI routes (`/openai/`): Azure OpenAI standard deployments by default, or Azure
 *   provisioned (PTU) deployments, or OpenAI's own API (`rules`).
 * - Anthropic routes (`/anthropic/`): Anthropic's (Claude on Foundry).
 * - `quota: 'friendly'`: the simulator's older model on both routes.
 *
 * Every window and bucket period is divided by the deployment's `timeScale`.
 */
import { AnthropicRules } from './rules/anthropic';
import { AzurePtuRules } from './rules/azure-ptu';
import { AzureStandardRules } from './rules/azure-standard';
import { FriendlyRules } from './rules/friendly';
import { OpenAIRules } from './rules/openai';
import type {
  Admission,
  QuotaCharge,
  QuotaDemand,
  QuotaSettings,
  UpstreamRules,
} from './rules/rule-set';
import type { CompletionPlan } from './wire/common';

export { FixedWindow, TokenBucket } from './rules/meters';
export type { Admission, OpenAIRulesKind, QuotaDemand, QuotaSettings } from './rules/rule-set';

/** Which rules apply: the wire family of the route. */
export type QuotaFamily = 'openai' | 'anthropic';

/** A charge admitted under one family's rules, to settle when the answer ends. */
interface FamilyCharge extends QuotaCharge {
  family: QuotaFamily;
}

/**
 * The quota state of one deployment: one rule set per route family, built from the settings
 * when first used and again when they change.
 *
 * @example
 * ```ts
 * const quota = new DeploymentQuota(() => settings, 1, 10_000);
 * const admission = quota.admit('openai', quota.demand('openai', plan), Date.now());
 * ```
 */
export class DeploymentQuota {
  /**
   * The levels of its quota pool path above it (an OpenAI organization above its project, an
   * Azure subscription's region above its deployments): a request goes only where each admits it,
   * and is charged at each. Their headers are not sent: the answer speaks of its own quota.
   */
  readonly levels: DeploymentQuota[] = [];
  private readonly kept: Partial<
    Record<QuotaFamily, { key: string; settings: QuotaSettings; rules: UpstreamRules }>
  > = {};

  constructor(
    private readonly settings: () => QuotaSettings,
    private readonly timeScale: number,
    /** The short request window when one is configured (Azure's default: 10 s). */
    private readonly requestWindowMs: number | undefined,
  ) {}

  /** Forgets all usage. */
  reset(): void {
    delete this.kept.openai;
    delete this.kept.anthropic;
  }

  /** The rules in force for `family`. */
  rules(family: QuotaFamily): UpstreamRules {
    const s = this.settings();
    const key = [
      s.quota,
      s.rules ?? 'azure',
      s.rpm,
      s.tpm,
      s.itpm,
      s.otpm,
      s.outputWeight ?? 1,
    ].join('/');
    // The friendly model counts both route families in one set of windows.
    const slot: QuotaFamily = s.quota === 'friendly' ? 'openai' : family;
    const kept = this.kept[slot];
    if (kept?.key === key) {
      // The limits are the same; what a request is charged may have changed at run time.
      Object.assign(kept.settings, s);
      return kept.rules;
    }
    const settings = { ...s };
    const rules = this.build(family, settings);
    this.kept[slot] = { key, settings, rules };
    return rules;
  }

  /** What `plan` asks of `family`'s quotas. */
  demand(family: QuotaFamily, plan: CompletionPlan): QuotaDemand {
    return this.rules(family).demand(plan);
  }

  /**
   * Admits `demand` when it fits, charging it; `force` charges it even when it does not fit
   * (usage by another application that the simulator does not refuse).
   */
  admit(family: QuotaFamily, demand: QuotaDemand, now: number, force = false): Admission {
    for (const level of force ? [] : this.levels) {
      const refused = level.rules(family).refusal?.(demand, now);
      // The level's refusal, with the headers of the quota the key sees.
      if (refused !== undefined) return { ...refused, headers: this.headers(family, now) };
    }
    const admission = this.rules(family).admit(demand, now, force);
    if (!admission.ok) return admission;
    for (const level of this.levels) level.rules(family).admit(demand, now, true);
    const charge: FamilyCharge = { ...admission.charge, family };
    return { ...admission, charge };
  }

  /** Ends an admitted charge with the output the answer produced. */
  settle(charge: QuotaCharge, actualOutputTokens: number, now: number): void {
    const family = (charge as Partial<FamilyCharge>).family ?? 'openai';
    this.rules(family).settle(charge, actualOutputTokens, now);
    for (const level of this.levels) level.rules(family).settle(charge, actualOutputTokens, now);
  }

  /** The rate-limit headers of an answer of `family` now, without charging anything. */
  headers(family: QuotaFamily, now: number): Record<string, string | number> {
    return this.rules(family).headers(now);
  }

  /** The retry headers of `family`'s 429 that frees up in `retryMs`. */
  retryHeaders(family: QuotaFamily, retryMs: number): Record<string, number> {
    return this.rules(family).retryHeaders(retryMs);
  }

  private build(family: QuotaFamily, settings: QuotaSettings): UpstreamRules {
    if (settings.quota === 'friendly') return new FriendlyRules(settings, this.timeScale);
    if (family === 'anthropic') {
      return new AnthropicRules(settings, this.timeScale, this.requestWindowMs);
    }
    switch (settings.rules ?? 'azure') {
      case 'azure-ptu':
        return new AzurePtuRules(settings, this.timeScale);
      case 'openai':
        return new OpenAIRules(settings, this.timeScale, this.requestWindowMs);
      default:
        return new AzureStandardRules(settings, this.requestWindowMs ?? 10_000, this.timeScale);
    }
  }
}

/**
 * Azure OpenAI provisioned (PTU) deployments, as "What is provisioned throughput?"
 * (learn.microsoft.com/azure/ai-services/openai/concepts/provisioned-throughput) and "Get started
 * using provisioned deployments" describe them:
 *
 * - capacity is utilization, kept by a leaky bucket: each request adds its estimated cost when
 *   admitted (uncached prompt plus its output cap, output weighted per model: gpt-4.1 counts an
 *   output token as 4 input tokens), corrected to the actual cost when it ends, and utilization
 *   drains continuously at the deployment's capacity (`tpm` input-equivalent tokens a minute here);
 * - cached input tokens are free (a 100 % discount on utilization);
 * - a request is admitted while utilization is below 100 %, whatever its size; above, a 429
 *   carries `retry-after-ms` (and `retry-after`) for when it will be below again;
 * - answers carry no `x-ratelimit-*` headers.
 */
import type { CompletionPlan } from '../wire/common';
import { MINUTE, TokenBucket } from './meters';
import {
  azureRetryHeaders,
  outputCap,
  type Admission,
  type QuotaCharge,
  type QuotaDemand,
  type QuotaSettings,
  type UpstreamRules,
} from './rule-set';

/**
 * Azure's provisioned deployment rules for one deployment.
 *
 * @example
 * ```ts
 * const rules = new AzurePtuRules({ ...settings, tpm: 60_000, outputWeight: 4 }, 1);
 * rules.admit(rules.demand(plan), Date.now(), false);
 * ```
 */
export class AzurePtuRules implements UpstreamRules {
  /** What is left below 100 % utilization: the bucket's room, refilled as utilization drains. */
  private readonly room?: TokenBucket;
  private readonly weight: number;

  constructor(
    private readonly settings: QuotaSettings,
    timeScale: number,
  ) {
    this.weight = settings.outputWeight ?? 1;
    if (settings.tpm > 0) this.room = new TokenBucket(settings.tpm, MINUTE / timeScale);
  }

  demand(plan: CompletionPlan): QuotaDemand {
    const input = Math.max(0, plan.promptTokens - (plan.cacheReadTokens ?? 0));
    const output = outputCap(plan, this.settings);
    return {
      requests: 1,
      tokens: input + output * this.weight,
      inputTokens: input,
      outputTokens: output,
    };
  }

  admit(demand: QuotaDemand, now: number, force: boolean): Admission {
    const room = this.room;
    if (room && !force && room.available(now) <= 0) {
      return {
        ok: false,
        reason: 'tokens',
        retryMs: room.waitMs(1, now),
        never: false,
        headers: {},
      };
    }
    room?.take(demand.tokens, now);
    return { ok: true, headers: {}, charge: { demand } };
  }

  settle(charge: QuotaCharge, actualOutput: number, now: number): void {
    const unused = Math.max(0, charge.demand.outputTokens - actualOutput) * this.weight;
    if (unused > 0) this.room?.give(unused, now);
  }

  /** Utilization at `now`, 1 = 100 % (what Azure Monitor reports). */
  utilization(now: number): number {
    const room = this.room;
    return room ? (room.capacity - room.available(now)) / room.capacity : 0;
  }

  headers(): Record<string, string | number> {
    return {};
  }

  retryHeaders(retryMs: number): Record<string, number> {
    return azureRetryHeaders(retryMs);
  }
}

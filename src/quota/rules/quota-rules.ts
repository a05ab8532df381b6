import type { ChargePolicy } from '../admission';
import type { BurstCounter } from '../burst-counter';
import type { InputCounter } from '../input-counter';
import type { Anchoring, CounterScope } from '../limit-counter';
import type { OutputCounter } from '../output-counter';
import type { OutputEstimate } from '../output-estimate';
import type { LimitName, QuotaLimit } from '../quota-limit';
import type { HeaderSource, RateLimitFamily, RateLimitReading } from '../rate-limit-headers';
import type { RequestsCounter } from '../requests-counter';
import type { ShortBucketCounter } from '../short-bucket-counter';
import type { TokensCounter } from '../tokens-counter';
import type { UtilizationCounter } from '../utilization-counter';

/**
 * The kinds of upstream whose documented rules the quota follows, one module each in
 * `src/quota/rules/`: Azure OpenAI standard and provisioned (PTU) deployments, OpenAI's own API,
 * and Anthropic's (Claude, on Foundry too).
 *
 * @example
 * ```ts
 * const kind: RulesKind = 'azure-ptu';
 * ```
 */
export type RulesKind = 'azure' | 'azure-ptu' | 'openai' | 'anthropic';

/**
 * The counters of one model on one deployment, as its rules built them: one per limit, and the
 * requests of a shorter interval (Azure's 10 s or 1 s window, a bucket's second).
 */
export interface LedgerCounters {
  tokens: TokensCounter;
  requests: RequestsCounter;
  /** Azure's short window of requests, or a bucket upstream's shorter interval. */
  burst: BurstCounter | ShortBucketCounter;
  input: InputCounter;
  output: OutputCounter;
  /** A provisioned deployment's utilization, over the tokens counter; else `undefined`. */
  utilization: UtilizationCounter | undefined;
  /** Claude's output expected of a call (charged in place of `max_tokens`); else `undefined`. */
  expected: OutputEstimate | undefined;
}

/** What rules are given to build a ledger's counters. */
export interface CounterBuild {
  limits: Readonly<Record<LimitName, QuotaLimit>>;
  clock: () => number;
  scope: CounterScope;
  /** `ModelConfig.outputWeight` (PTU). */
  outputWeight: number | undefined;
  /** Whether the buckets the rules ramp do (`ModelConfig.rampUp`; never a pool level's). */
  ramp: boolean;
}

/** What rules may touch of a ledger when they read an answer or a refusal. */
export interface RuleTarget {
  readonly counters: LedgerCounters;
  readonly limits: Readonly<Record<LimitName, QuotaLimit>>;
  readonly scope: CounterScope;
  /** Whose headers the ledger reads (`undefined`: both, a ledger built without rules). */
  readonly family: RateLimitFamily | undefined;
  /** Whether `requestWindow` was configured: then no answer changes it. */
  readonly requestWindowSet: boolean;
  /** A limit or an interval changed: what was kept of the counters is stale. */
  changed(): void;
}

/**
 * A rule the upstream left open that a deployment learned from its answers (`'request-window-1s'`:
 * a per-minute request limit enforced per second), told once per deployment in the log and
 * counted in `switchboard.learned_rules`.
 */
export type LearnedRule = 'request-window-1s' | 'request-window-10s';

/**
 * One upstream's documented rules, as the quota follows them: which counters it keeps and how
 * they count (windows or buckets), how a call is charged (`policy`, `reservation`, the output
 * expected, cached input), how its answers' headers are read and handed to the counters, and what
 * a refusal teaches. Stateless: the state is in the counters it builds. Chosen once per
 * deployment ({@link rulesFor}).
 *
 * @example
 * ```ts
 * const rules = rulesFor('anthropic');
 * rules.policy; // 'actual': Claude settles to what the answer produced
 * ```
 */
export interface QuotaRules {
  readonly kind: RulesKind;
  /** How the upstream reconciles its admission charge. */
  readonly policy: ChargePolicy;
  /** Whose rate-limit headers its answers carry (none on a PTU: Azure's family is read). */
  readonly family: RateLimitFamily;
  /** Output tokens reserved for each output of a call without a cap, until configured or learned. */
  readonly reservation: number;
  /** Whether a prompt prefix known cached on the deployment is free of the input charge. */
  readonly cachedInputFree: boolean;
  /** Builds the counters of one ledger. */
  counters(build: CounterBuild): LedgerCounters;
  /**
   * What an answer's headers say, or `undefined` when they say nothing of its limits; written
   * into `into` when given (see `readRateLimits`).
   */
  read(
    headers: HeaderSource,
    withLimits: boolean,
    into?: RateLimitReading,
  ): RateLimitReading | undefined;
  /** Hands each value of a reading to the counter of its limit. */
  apply(reading: RateLimitReading, context: Anchoring, ledger: RuleTarget): void;
  /**
   * The upstream refused a call for its request limit (`retryMs`: its `retry-after`) while our
   * count had room for it: returns the stricter reading the deployment switches to, if any.
   */
  refused(ledger: RuleTarget, retryMs: number | undefined, now: number): LearnedRule | undefined;
  /**
   * Another replica learned `rule` of this deployment (a shared store brought it): count by it
   * here too, unless `requestWindow` is configured or it already does. True when that is news.
   */
  adopt(ledger: RuleTarget, rule: LearnedRule, now: number): boolean;
}

import type { ModelConfig } from '../types';
import type { PoolLevel } from './pool-level';
import type { LimitListener } from './reading';
import type { LearnedRule, QuotaRules, RulesKind } from './rules/quota-rules';

/**
 * Options of a `QuotaLedger` beyond its limits.
 *
 * @example
 * ```ts
 * new QuotaLedger({ tpm: 60_000 }, Date.now, { upstream: 'openai' } satisfies QuotaLedgerOptions);
 * ```
 */
export interface QuotaLedgerOptions {
  /**
   * @internal The upstream's rules (`src/quota/rules/`), chosen once per deployment (`rulesFor`); default:
   * those of `upstream`, else Azure OpenAI's (a PTU's for a `provisioned` model), reading both
   * header families.
   */
  rules?: QuotaRules;
  /** The kind of upstream whose rules to follow, where `rules` is not given. */
  upstream?: RulesKind;
  /** Told when a limit is learned from the headers, or corrected by them. */
  onLimit?: LimitListener;
  /** Told when the upstream taught a rule it leaves open (a shorter request interval). */
  onRule?: (rule: LearnedRule) => void;
  /** @internal The configured levels of its quota pool path (`quotaPools`): each charged, each asked. */
  levels?: readonly PoolLevel[];
}

/**
 * What a ledger is built from: a model's limits and the settings its rules read.
 *
 * @example
 * ```ts
 * const config: LedgerConfig = { tpm: 60_000, rpm: 360, rampUp: false };
 * ```
 */
export type LedgerConfig = Pick<
  ModelConfig,
  | 'tpm'
  | 'rpm'
  | 'itpm'
  | 'otpm'
  | 'requestWindow'
  | 'outputReservation'
  | 'cacheReadsCountInput'
  | 'rampUp'
  | 'provisioned'
  | 'outputWeight'
>;

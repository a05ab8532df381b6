import type { HotRow } from '../quota/hot-row';
import type { PoolLevel } from '../quota/pool-level';
import type { QuotaLedger, QuotaLedgerOptions } from '../quota/quota-ledger';
import type { QuotaRules } from '../quota/rules/quota-rules';

/**
 * Options of a `ModelState` beyond its configuration: its upstream's quota rules, and the
 * cap of every cooldown (`maxCooldown`, ms, default one day).
 *
 * @example
 * ```ts
 * new ModelState({ name: 'gpt-4o-mini', tpm: 30_000 }, 'east', Date.now, { maxCooldown: 60_000 });
 * ```
 */
export type ModelStateOptions = Pick<QuotaLedgerOptions, 'upstream'> & {
  /** @internal The upstream's quota rules, as the ledger takes them. */
  rules?: QuotaRules;
  maxCooldown?: number;
  /**
   * @internal The ledger of the model's `quotaPool`, when another member built it: this model
   * then counts its calls there, with the pool's other members.
   */
  ledger?: QuotaLedger;
  /** @internal The configured levels of its quota pool path, shared with every member below them. */
  levels?: readonly PoolLevel[];
  /** @internal The row of its registry's table its quota keeps what a draw reads in. */
  hot?: HotRow;
};

import type { LimitName } from '../quota/quota-limit';
import type { LearnedRule } from '../quota/rules/quota-rules';

/**
 * What a `ModelState` tells its listeners.
 *
 * @example
 * ```ts
 * registry.onModelEvent((state, event) => {
 *   if (event.type === 'down') console.log(`${state.deployment} cools until ${event.until}`);
 * });
 * ```
 */
export type ModelEvent =
  | { type: 'down'; until: number; reason?: string }
  | { type: 'up' }
  /** A call ended at the `maxInFlight` cap: a slot is free. */
  | { type: 'free' }
  | { type: 'spend'; tokens: number; requests: number }
  | { type: 'limit'; limit: LimitName; value: number; was: number; configured: boolean }
  /** The upstream taught a rule it leaves open (`switchboard.learned_rules`). */
  | { type: 'rule'; rule: LearnedRule };

import type { CounterScope } from './limit-counter';
import type { UsageCount } from './drain-count';
import { IoCounter } from './io-counter';
import type { QuotaLimit } from './quota-limit';

/**
 * Input tokens per minute (`itpm`, Claude on Foundry): every call charges its prompt
 * (`chargeOf('input', …)`) less what is cached on that deployment (Anthropic's cache reads count
 * for none of it), its answer settles the uncached input and cache writes, and
 * `anthropic-ratelimit-input-tokens-remaining` corrects it.
 *
 * @example
 * ```ts
 * const input = new InputCounter(new QuotaLimit('itpm', 30_000), new DrainCount(() => 30_000), scope);
 * fits(input, { input: 1_200, output: 256 }, now);
 * ```
 */
export class InputCounter extends IoCounter {
  constructor(limit: QuotaLimit, window: UsageCount, scope: CounterScope) {
    super(limit, window, 'input', scope);
  }
}

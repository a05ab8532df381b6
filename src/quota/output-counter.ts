import type { CounterScope } from './limit-counter';
import type { UsageCount } from './drain-count';
import { IoCounter } from './io-counter';
import type { OutputEstimate } from './output-estimate';
import type { QuotaLimit } from './quota-limit';

/**
 * Output tokens per minute (`otpm`, Claude on Foundry): every call charges its output
 * (`chargeOf('output', …)`), which on Claude is the output expected of it (`estimate`: the
 * upstream counts what answers produce, never `max_tokens`), settled to what its answer reports,
 * and `anthropic-ratelimit-output-tokens-remaining` corrects it.
 *
 * @example
 * ```ts
 * const output = new OutputCounter(new QuotaLimit('otpm', 8_000), new DrainCount(() => 8_000), scope, new OutputEstimate());
 * fits(output, { input: 1_200, output: 4_096 }, now);
 * ```
 */
export class OutputCounter extends IoCounter {
  constructor(
    limit: QuotaLimit,
    window: UsageCount,
    scope: CounterScope,
    /** Claude's: the output a call is expected to produce, charged at most the limit. */
    estimate?: OutputEstimate,
  ) {
    super(limit, window, 'output', scope, estimate);
  }
}

import type { CounterScope } from './limit-counter';
import type { UsageCount } from './drain-count';
import type { QuotaLimit } from './quota-limit';
import { WindowCounter } from './window-counter';

/**
 * Tokens per minute (`tpm`): every call charges its prompt estimate and reserved output
 * (`chargeOf('tokens', …)`), counted in Azure OpenAI's minute window, or in OpenAI's token bucket
 * (a `DrainCount`), and corrected by `x-ratelimit-remaining-tokens` (Anthropic's
 * `anthropic-ratelimit-tokens-remaining` where it is a limit of its own).
 *
 * @example
 * ```ts
 * const tokens = new TokensCounter(new QuotaLimit('tpm', 10_000), new WindowCount(clock), scope);
 * fits(tokens, { input: 1_200, output: 256 }, now);
 * ```
 */
export class TokensCounter extends WindowCounter {
  constructor(limit: QuotaLimit, window: UsageCount, scope: CounterScope) {
    super(limit, window, 'tokens', scope);
  }
}

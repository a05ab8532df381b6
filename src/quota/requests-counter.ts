import type { CounterScope } from './limit-counter';
import type { UsageCount } from './drain-count';
import type { QuotaLimit } from './quota-limit';
import { WindowCounter } from './window-counter';

/**
 * Requests per minute (`rpm`): every call is one request (`chargeOf('requests', …)`), counted in
 * the minute's window (whose newest sixth the `BurstCounter` reads), or in OpenAI's request bucket
 * (a `DrainCount`), and corrected by a requests header that speaks of the minute.
 *
 * @example
 * ```ts
 * const requests = new RequestsCounter(new QuotaLimit('rpm', 60), new WindowCount(clock, true), scope);
 * fits(requests, { input: 1_200, output: 256 }, now);
 * ```
 */
export class RequestsCounter extends WindowCounter {
  constructor(limit: QuotaLimit, window: UsageCount, scope: CounterScope) {
    super(limit, window, 'requests', scope);
  }
}

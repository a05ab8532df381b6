import { ShortBucketCounter } from '../short-bucket-counter';
import type { LearnedRule, RuleTarget } from './quota-rules';

/**
 * What a bucket upstream's 429 for requests teaches (OpenAI's, Anthropic's): while the minute's
 * count had room for the refused call, the limit is enforced per second, and the deployment's
 * shorter interval becomes one second's share (unless `requestWindow` is configured).
 *
 * @example
 * ```ts
 * const rule = bucketRefused(ledger, 1_000, Date.now()); // 'request-window-1s', once
 * ```
 */
export function bucketRefused(
  ledger: RuleTarget,
  _retryMs: number | undefined,
  now: number,
): LearnedRule | undefined {
  const short = ledger.counters.burst;
  if (!(short instanceof ShortBucketCounter) || ledger.requestWindowSet) return undefined;
  const requests = ledger.counters.requests;
  // A minute's bucket we count as full explains the refusal.
  if (requests.limit.value > 0 && requests.room(now) < 0) return undefined;
  if (!short.refused(now)) return undefined;
  ledger.changed();
  return 'request-window-1s';
}

/**
 * A bucket upstream's rule another replica learned: requests enforced per second here too
 * (unless `requestWindow` is configured). True when that is news.
 *
 * @example
 * ```ts
 * bucketAdopt(ledger, 'request-window-1s', Date.now()); // true, once
 * ```
 */
export function bucketAdopt(ledger: RuleTarget, rule: LearnedRule, now: number): boolean {
  const short = ledger.counters.burst;
  if (rule !== 'request-window-1s' || !(short instanceof ShortBucketCounter)) return false;
  if (ledger.requestWindowSet || !short.refused(now)) return false;
  ledger.changed();
  return true;
}

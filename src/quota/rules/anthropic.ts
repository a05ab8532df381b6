/**
 * Anthropic's Messages API and Claude on Foundry, as the quota follows them (the table
 * "Anthropic, Claude on Foundry" in docs/quota-counters.md, from Anthropic's "Rate limits" page):
 *
 * - counters: `itpm`, `otpm`, each a bucket "continuously replenished" (`InputCounter`,
 *   `OutputCounter` over `DrainCount`s); `rpm` over the sliding minute (`RequestsCounter`: never
 *   more than the bucket admits, and the count peers and operators read), with requests that "may
 *   be enforced over shorter time intervals" no header shows (`ShortBucketCounter`:
 *   `requestWindow` when configured, else a ramp that a 429 for requests turns into one second's
 *   share); `tpm` a workspace's combined limit, when one is set (`TokensCounter`); the input
 *   bucket ramps ({@link ANTHROPIC_RAMP}: "acceleration limits", 429s on sharp increases);
 * - charge: input = uncached input + cache writes (a prefix known cached on the deployment is
 *   free); output = what answers produce (`actual`): a call is charged the output expected of it
 *   (`OutputEstimate`, at most its `max_tokens`), never refused for a cap above `otpm`; no
 *   reservation (`max_tokens` is required);
 * - headers: `anthropic-ratelimit-*`; the tokens' `remaining` is "rounded to the nearest thousand"
 *   and read 500 lower (`readRateLimits`); `tokens-*` is the most restrictive limit in effect, the
 *   sum of input and output (then not a limit of its own) or a workspace's below it.
 */
import { readRateLimits, type RateLimitReading } from '../rate-limit-headers';
import { buildCounters } from './build-counters';
import type { QuotaRules, RuleTarget } from './quota-rules';
import { bucketAdopt, bucketRefused } from './short-interval';

/**
 * How Anthropic's input bucket ramps after a cold start or two idle minutes: its rate-limit page
 * warns of acceleration limits (429s on "sharp increases in usage", "ramp up traffic gradually")
 * without numbers, so a sixth of the bucket (ten seconds' refill) at once, all of it after 30 s.
 *
 * @example
 * ```ts
 * ANTHROPIC_RAMP.ms; // 30 000
 * ```
 */
export const ANTHROPIC_RAMP = Object.freeze({ start: 1 / 6, ms: 30_000, idleMs: 120_000 });

/**
 * Anthropic's rules.
 *
 * @example
 * ```ts
 * ANTHROPIC.policy; // 'actual'
 * ```
 */
export const ANTHROPIC = Object.freeze<QuotaRules>({
  kind: 'anthropic',
  policy: 'actual',
  family: 'anthropic',
  reservation: 0,
  cachedInputFree: true,
  counters: (build) =>
    buildCounters(build, {
      tokens: 'window',
      requests: 'window',
      io: 'bucket',
      short: 'bucket',
      expectedOutput: true,
      // Output is counted as answers produce it, over their seconds: calls sent together already
      // spread it, and what is charged at sending is only an estimate (512 before any answer).
      ramp: { plan: ANTHROPIC_RAMP, limits: ['input'] },
    }),
  read: (headers, withLimits, into) =>
    readRateLimits(headers, withLimits, 'anthropic', false, into),
  apply(reading, context, ledger) {
    const { tokens, requests, input, output } = ledger.counters;
    if (reading.tokens && !isIoSum(reading, ledger)) tokens.anchor(reading.tokens, context);
    if (reading.requests) requests.anchor(reading.requests, context);
    if (reading.input) input.anchor(reading.input, context);
    if (reading.output) output.anchor(reading.output, context);
  },
  refused: bucketRefused,
  adopt: bucketAdopt,
});

/**
 * Anthropic's `tokens-*` is the most restrictive limit in effect: the sum of the input and output
 * buckets (then it says nothing their counters do not, and is not a limit of its own), or a
 * workspace's combined limit below it.
 */
function isIoSum(reading: RateLimitReading, ledger: RuleTarget): boolean {
  const { tpm, itpm, otpm } = ledger.limits;
  const limit = reading.tokens?.limit;
  if (limit === undefined) return !(tpm.value > 0);
  const io = (reading.input?.limit ?? itpm.value) + (reading.output?.limit ?? otpm.value);
  return io > 0 && limit >= io;
}

/**
 * OpenAI's own API, as the quota follows it (the table "OpenAI" in docs/quota-counters.md, from
 * OpenAI's "Rate limits" guide):
 *
 * - counters: `tpm` and `rpm`, each a bucket that refills continuously (`TokensCounter`,
 *   `RequestsCounter` over `DrainCount`s); requests may also be "quantized", enforced over a
 *   shorter interval no header shows (`ShortBucketCounter`: `requestWindow` when configured, else
 *   a ramp that a 429 for requests turns into one second's share); the token bucket ramps
 *   ({@link OPENAI_RAMP});
 * - charge: prompt + `max_tokens`, kept (`reserve`); an uncapped call reserves nothing (the guide
 *   charges the larger of `max_tokens` and the estimate, the prompt without a cap);
 * - headers: `x-ratelimit-*` of the minute's buckets; resets say "full again in", which the drain
 *   already says.
 */
import { readRateLimits } from '../rate-limit-headers';
import { buildCounters } from './build-counters';
import type { QuotaRules } from './quota-rules';
import { bucketAdopt, bucketRefused } from './short-interval';

/**
 * How OpenAI's token bucket ramps after a cold start or two idle minutes: a sixth of it (ten
 * seconds' refill) at once, all of it after 30 s. Its guide says nothing of acceleration; a
 * minute's burst a minute apart never ramps (the bucket drained and refilled between).
 *
 * @example
 * ```ts
 * OPENAI_RAMP.start; // 1 / 6
 * ```
 */
export const OPENAI_RAMP = Object.freeze({ start: 1 / 6, ms: 30_000, idleMs: 120_000 });

/**
 * OpenAI's rules.
 *
 * @example
 * ```ts
 * OPENAI.reservation; // 0
 * ```
 */
export const OPENAI = Object.freeze<QuotaRules>({
  kind: 'openai',
  policy: 'reserve',
  family: 'openai',
  reservation: 0,
  cachedInputFree: false,
  counters: (build) =>
    buildCounters(build, {
      tokens: 'bucket',
      requests: 'bucket',
      io: 'window',
      short: 'bucket',
      ramp: { plan: OPENAI_RAMP, limits: ['tokens'] },
    }),
  read: (headers, withLimits, into) => readRateLimits(headers, withLimits, 'openai', false, into),
  apply(reading, context, ledger) {
    const { tokens, requests } = ledger.counters;
    if (reading.tokens) tokens.anchor(reading.tokens, context);
    // Its requests header speaks of the minute's bucket.
    if (reading.requests) requests.anchor(reading.requests, context);
  },
  refused: bucketRefused,
  adopt: bucketAdopt,
});

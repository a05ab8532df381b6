/**
 * Azure OpenAI provisioned (PTU) deployments, as the quota follows them (the table "Azure OpenAI,
 * provisioned deployments" in docs/quota-counters.md, from Microsoft Learn's "What is provisioned
 * throughput?"):
 *
 * - counters: `tpm` is the capacity in input-equivalent tokens a minute, kept as a bucket that
 *   drains at it (`TokensCounter` over a `DrainCount`), read as utilization
 *   (`UtilizationCounter`): a call is admitted while it is below 100 %, whatever its size;
 * - charge: uncached prompt + output cap (or the reservation) × `outputWeight`, settled to the
 *   actual output × weight; a prefix known cached there is free;
 * - headers: none (`x-ratelimit-*` would be read if one came); a 429's `retry-after-ms` cools.
 */
import { readRateLimits } from '../rate-limit-headers';
import { buildCounters } from './build-counters';
import type { QuotaRules } from './quota-rules';

/**
 * Azure OpenAI's provisioned deployment rules.
 *
 * @example
 * ```ts
 * AZURE_PTU.cachedInputFree; // true
 * ```
 */
export const AZURE_PTU = Object.freeze<QuotaRules>({
  kind: 'azure-ptu',
  policy: 'reserve',
  family: 'openai',
  reservation: 648,
  cachedInputFree: true,
  counters: (build) =>
    buildCounters(build, {
      tokens: 'bucket',
      requests: 'bucket',
      io: 'window',
      short: 'none',
      utilization: true,
    }),
  read: (headers, withLimits, into) => readRateLimits(headers, withLimits, 'openai', false, into),
  apply(reading, context, ledger) {
    const { tokens, requests } = ledger.counters;
    if (reading.tokens) tokens.anchor(reading.tokens, context);
    if (reading.requests) requests.anchor(reading.requests, context);
  },
  refused: () => undefined,
  adopt: () => false,
});

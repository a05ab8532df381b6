/**
 * Azure OpenAI standard (pay-as-you-go) deployments, as the quota follows them (the table
 * "Azure OpenAI, standard deployments" in docs/quota-counters.md, from Microsoft Learn's "Manage
 * Azure OpenAI Service quota"):
 *
 * - counters: `tpm` in the minute's fixed window (`TokensCounter` over a `WindowCount`), `rpm` in
 *   the minute (`RequestsCounter`), and requests over its short window, `rpm / 6` per 10 s or
 *   `rpm / 60` per 1 s (`BurstCounter`, the newest sixth or sixtieth of the requests' window);
 * - charge: prompt + `max_tokens`, kept for the minute (`reserve`); an uncapped call reserves a
 *   model-dependent default, 648 until `outputReservation` or an answer says otherwise;
 * - headers: `x-ratelimit-*`; the requests ones speak of the short window (and teach `rpm`, six or
 *   sixty times their limit, when none is configured), the tokens ones of the minute; resets say
 *   when the window ends;
 * - learned: the 1 s window, from a requests header whose limit is `rpm / 60`, or from a 429 for
 *   requests that asks to wait a second or less while our 10 s count had room.
 */
import type { ReportedLimit } from '../rate-limit-headers';
import { readRateLimits, requestsPerMinute } from '../rate-limit-headers';
import { shortLimit } from '../request-window';
import { BurstCounter } from '../burst-counter';
import type { Anchoring } from '../limit-counter';
import { buildCounters } from './build-counters';
import type { QuotaRules, RuleTarget } from './quota-rules';

/**
 * Azure OpenAI's standard deployment rules.
 *
 * @example
 * ```ts
 * AZURE_STANDARD.reservation; // 648
 * ```
 */
export const AZURE_STANDARD = Object.freeze<QuotaRules>({
  kind: 'azure',
  policy: 'reserve',
  family: 'openai',
  reservation: 648,
  cachedInputFree: false,
  counters: (build) =>
    buildCounters(build, { tokens: 'window', requests: 'window', io: 'window', short: 'window' }),
  read: (headers, withLimits, into) => readRateLimits(headers, withLimits, 'openai', false, into),
  apply(reading, context, ledger) {
    const { tokens, requests, burst, input, output } = ledger.counters;
    if (reading.tokens) tokens.anchor(reading.tokens, context);
    if (reading.requests) {
      if (ledger.family === 'openai') anchorShortWindow(reading.requests, context, ledger);
      else if (burst.claims(reading.requests)) burst.anchor(reading.requests, context);
      else requests.anchor(reading.requests, context);
    }
    if (reading.input) input.anchor(reading.input, context);
    if (reading.output) output.anchor(reading.output, context);
  },
  refused(ledger, retryMs, now) {
    const burst = ledger.counters.burst;
    if (!(burst instanceof BurstCounter) || ledger.requestWindowSet || burst.period === '1s')
      return undefined;
    if (retryMs === undefined || retryMs > 1_000) return undefined;
    // A 10 s window we count as full (the refused call is in it) explains the refusal.
    if (burst.active && burst.used(now) > burst.limit) return undefined;
    oneSecond(ledger, burst, now);
    return 'request-window-1s';
  },
  adopt(ledger, rule, now) {
    const burst = ledger.counters.burst;
    if (rule !== 'request-window-1s' || !(burst instanceof BurstCounter)) return false;
    if (ledger.requestWindowSet || burst.period === '1s') return false;
    oneSecond(ledger, burst, now);
    return true;
  },
});

/** Azure's short request window is 1 s from now on. */
function oneSecond(ledger: RuleTarget, burst: BurstCounter, now: number): void {
  const rpm = ledger.limits.rpm;
  burst.period = '1s';
  // A learned rpm is six times the header's limit, which speaks of the 1 s window now.
  if (rpm.configured === undefined && rpm.value > 0) ledger.scope.learned(rpm, rpm.value * 10, now);
  ledger.changed();
}

/**
 * Azure's requests header speaks of its short window: its limit teaches `rpm` (six 10 s windows)
 * when none is configured, never replaces a configured one, and its remaining corrects the count
 * of that window only, never the minute's. A limit of `rpm / 60` where `rpm / 6` was expected
 * says the window is 1 s (unless `requestWindow` is configured).
 */
function anchorShortWindow(reported: ReportedLimit, context: Anchoring, ledger: RuleTarget): void {
  const burst = ledger.counters.burst as BurstCounter;
  const rpm = ledger.limits.rpm;
  const limit = reported.limit;
  if (limit !== undefined && context.peer === undefined) {
    if (!(rpm.configured !== undefined && rpm.configured > 0)) {
      const perMinute = requestsPerMinute(limit, 'openai', burst.period);
      ledger.scope.learned(rpm, perMinute, context.now);
    } else if (
      !ledger.requestWindowSet &&
      limit !== shortLimit(rpm.value, burst.period) &&
      (limit === shortLimit(rpm.value, '1s') || limit === shortLimit(rpm.value, '10s'))
    ) {
      burst.period = limit === shortLimit(rpm.value, '1s') ? '1s' : '10s';
      ledger.changed();
    }
  }
  if (burst.claims(reported)) burst.anchor(reported, context);
}

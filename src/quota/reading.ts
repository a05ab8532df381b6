import type { LimitName } from './quota-limit';
import type { RateLimitReading } from './rate-limit-headers';

/** What the upstream last reported for one limit, for operators. */
export interface ReportedRemaining {
  /** What the header said was left. */
  remaining: number;
  /** Epoch ms of the answer. */
  at: number;
}

/**
 * An answer's rate-limit reading as one instance shares it with the others (through a shared
 * state store), so that an instance that has not heard from a deployment lately anchors on the
 * upstream's count another instance heard. It corrects usage only: a limit is never learned
 * from another instance's reading.
 *
 * @example
 * ```ts
 * const r: SharedReading = { sentAt: t0, at: t0 + 800, tokens: 1_250, tokensEnd: t0 + 41_000,
 *   requestsEnd: 0, reading: { tokens: { limit: 10_000, remaining: 3_100 } } };
 * ```
 */
export interface SharedReading {
  /** When the call it answers was sent (epoch ms): the upstream's count is of that moment. */
  sentAt: number;
  /** When the answer came back (epoch ms). */
  at: number;
  /** What that call was charged (0 when nothing: it was refused); its request counts too. */
  tokens: number;
  /** When the upstream's token / request window ends (epoch ms), as known then; 0 = not known. */
  tokensEnd: number;
  requestsEnd: number;
  reading: RateLimitReading;
}

/**
 * Told when an answer's headers teach a limit, or correct a configured one: the new `value`, the
 * one it replaces (`was`, 0 when none was known) and whether that one was configured.
 *
 * @example
 * ```ts
 * const onLimit: LimitListener = (limit, value) => logger.log(`${limit} ${value} learned`);
 * ```
 */
export type LimitListener = (
  limit: LimitName,
  value: number,
  was: number,
  configured: boolean,
) => void;

/**
 * `reading` without the parts whose window has ended by `now` (its end passed, or the call was
 * sent before the window it spoke of rolled at `tokensRolled` / `requestsRolled`): itself when
 * both parts live, `undefined` when none does.
 *
 * @example
 * ```ts
 * const live = liveParts(reading, Date.now(), tokens.rolledAt, requests.rolledAt);
 * ```
 */
export function liveParts(
  reading: SharedReading,
  now: number,
  tokensRolled: number,
  requestsRolled: number,
): SharedReading | undefined {
  const tokensGone =
    (reading.tokensEnd !== 0 && reading.tokensEnd <= now) || reading.sentAt < tokensRolled;
  const requestsGone =
    (reading.requestsEnd !== 0 && reading.requestsEnd <= now) || reading.sentAt < requestsRolled;
  if (!tokensGone && !requestsGone) return reading;
  const rest = { ...reading.reading };
  if (tokensGone) delete rest.tokens;
  if (requestsGone) delete rest.requests;
  if (rest.tokens === undefined && rest.requests === undefined) return undefined;
  return { ...reading, reading: rest };
}

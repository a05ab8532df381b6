import { heldBackError, type RateLimitErrorClass } from '../quota/no-room';
import { durationInWords } from '../runtime/duration-words';
import type {
  TenantCharge,
  TenantLimitName,
  TenantLimits,
  TenantVerdict,
} from '../state/tenant-counts';

/**
 * What a tenant's limit counts, for messages.
 *
 * @example
 * ```ts
 * `above ${value} ${TENANT_UNITS.tpm}`; // 'above 20000 tokens per minute'
 * ```
 */
export const TENANT_UNITS: Readonly<Record<TenantLimitName, string>> = {
  tpm: 'tokens per minute',
  rpm: 'requests per minute',
  tokensPerDay: 'tokens per UTC day',
  budget: 'USD',
};

/**
 * A refusal of a tenant's counts: which limit, and when room is expected.
 *
 * @example
 * ```ts
 * const r: TenantRefusal = { ok: false, limit: 'rpm', used: 60, value: 60, waitMs: 1_000 };
 * ```
 */
export type TenantRefusal = Extract<TenantVerdict, { ok: false }>;

/**
 * A call its tenant's limit holds back, as its 429 tells it: whose, what it asked, how long it
 * waited.
 *
 * @example
 * ```ts
 * const held: HeldCall = { tenant: 'acme', charge, RateLimitError, waited: 0, maxQueued: 1_000 };
 * ```
 */
interface HeldCall {
  readonly tenant: string;
  /** What it asked at admission. */
  readonly charge: TenantCharge;
  readonly RateLimitError: RateLimitErrorClass;
  /** ms it waited for room. */
  readonly waited: number;
  /** Calls its tenant's line holds at most (0: none wait). */
  readonly maxQueued: number;
}

/**
 * The SDK's `RateLimitError` of a call its tenant's limit holds back: the limit, what was taken
 * of it and what the call needs, and when room is expected (`retry-after`); with no refusal,
 * its tenant's line was full.
 *
 * @example
 * ```ts
 * throw overLimitError(held, { ok: false, limit: 'rpm', used: 60, value: 60, waitMs: 1_000 });
 * ```
 */
export function overLimitError(held: HeldCall, v: TenantRefusal | undefined): Error {
  const { tenant, waited, charge } = held;
  const after = waited > 0 ? ` after waiting ${Math.round(waited)} ms` : '';
  if (v === undefined) {
    return heldBackError(
      held.RateLimitError,
      'switchboard_tenant_limit',
      `Tenant ${tenant} has ${held.maxQueued} calls waiting for room already${after}`,
      1_000,
    );
  }
  const wants = v.limit === 'budget' ? charge.usd : v.limit === 'rpm' ? 1 : charge.tokens;
  const fmt = (n: number) => (v.limit === 'budget' ? `${+n.toFixed(6)}` : String(n));
  const message =
    v.reason !== undefined
      ? `Tenant ${tenant}: ${v.reason}${after}`
      : `Tenant ${tenant} is over its ${v.limit} limit: ${fmt(v.used)} of ${fmt(v.value)} ${TENANT_UNITS[v.limit]} ` +
        `taken, this call needs ${fmt(wants)}${after}; room again in ${durationInWords(v.waitMs)}`;
  const periodEnd = v.limit === 'budget' || v.limit === 'tokensPerDay';
  return heldBackError(held.RateLimitError, 'switchboard_tenant_limit', message, v.waitMs, {
    untilPeriodEnd: periodEnd,
  });
}

/**
 * The limit (`tpm`, else `tokensPerDay`) a call of `tokens` at admission is above by itself.
 *
 * @example
 * ```ts
 * neverFits({ tpm: 2000 }, 2500); // 'tpm'
 * ```
 */
export function neverFits(
  limits: TenantLimits,
  tokens: number,
): 'tpm' | 'tokensPerDay' | undefined {
  if ((limits.tpm ?? 0) > 0 && tokens > limits.tpm!) return 'tpm';
  if ((limits.tokensPerDay ?? 0) > 0 && tokens > limits.tokensPerDay!) return 'tokensPerDay';
  return undefined;
}

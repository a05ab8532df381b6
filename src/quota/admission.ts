import type { CachePrefix } from './cached-prefixes';
import type { TokenUsage } from '../types';

export type { TokenUsage };

/**
 * What the upstream charges a call at admission, in tokens: its prompt (`input`, the switchboard's
 * estimate) and the output it reserves (`output`: the call's `max_tokens` /
 * `max_completion_tokens`, or 0 when the call sets no cap and no default reservation applies).
 * Every admission is also one request.
 *
 * @example
 * ```ts
 * const admission: Admission = { input: 1200, output: 256 };
 * state.hasRoom(admission); // room for 1456 tokens and a request?
 * ```
 */
export interface Admission {
  input: number;
  output: number;
  /**
   * Share (0..1) of each limit the call must leave free: a batch call's headroom for interactive
   * traffic. Absent: the call may take the whole limit.
   */
  reserve?: number;
  /**
   * @internal Where each counter stood when the call was admitted, in its unit: what it had
   * charged before it (undefined: no counter of that unit sent it). Set by the quota, so that its
   * answer's reading is matched to what was sent before it (see `send-order.ts`). Fields of the
   * admission rather than an object of marks: every call is admitted.
   */
  sentTokens?: number;
  /** @internal See {@link sentTokens}. */
  sentRequests?: number;
  /** @internal See {@link sentTokens}. */
  sentInput?: number;
  /** @internal See {@link sentTokens}. */
  sentOutput?: number;
  /**
   * The call sets no output cap: the upstream reserves its own default for each of this many
   * outputs (chat's `n`). The quota charges its `outputReservation` for each, written into
   * `output` when the call is admitted to a deployment.
   */
  uncapped?: number;
  /**
   * The prompt prefix the call asks the upstream to cache (Claude's `cache_control`
   * breakpoints): where it is known to be cached, its tokens are read from the cache and, by
   * Anthropic's rule, not charged as input.
   */
  cachePrefix?: CachePrefix;
  /**
   * @internal The call's own charge, before a deployment priced it (`askedInput` undefined: not
   * priced otherwise): set when a deployment charges it otherwise (an uncapped call's
   * reservation, Claude's expected output, a cached prefix), so that another deployment prices it
   * afresh. Two fields rather than an object: most calls are uncapped, and this is every one's.
   */
  askedInput?: number;
  /** @internal See {@link askedInput}. */
  askedOutput?: number;
  /**
   * @internal An uncapped call's place in the list of such calls its ledger has in flight
   * (undefined: none), set by the quota.
   */
  slot?: number;
}

/**
 * The input a call asked for itself, before a deployment priced it (see `askedInput`): what
 * another deployment prices afresh, and what a tenant's budget reserves.
 *
 * @example
 * ```ts
 * ownInput({ input: 900, output: 4_096, askedInput: 1_000, askedOutput: 0 }); // 1000
 * ```
 */
export function ownInput(admission: Admission): number {
  return admission.askedInput ?? admission.input;
}

/** The output a call asked for itself, before a deployment priced it (see {@link ownInput}). */
export function ownOutput(admission: Admission): number {
  return admission.askedOutput ?? admission.output;
}

/**
 * What a counter counts of a call: its `tokens` (`tpm`), its `requests` (`rpm`, and the burst of
 * the short request window), its `input` (`itpm`) or its `output` tokens (`otpm`).
 */
export type ChargeUnit = 'tokens' | 'requests' | 'input' | 'output';

/**
 * The charge rule: how much of `unit` a call charging `input` and `output` tokens takes. A call
 * is `input + output` tokens and one request (`requests`: 1 at admission; 0 for a change to its
 * tokens, as a settled or failed call stays one request). Every counter, the hot row and what
 * reports a charge count by it.
 *
 * @example
 * ```ts
 * chargeOf('tokens', 1_200, 256); // 1456
 * chargeOf('requests', 1_200, 256); // 1
 * ```
 */
export function chargeOf(unit: ChargeUnit, input: number, output: number, requests = 1): number {
  if (unit === 'tokens') return input + output;
  if (unit === 'requests') return requests;
  return unit === 'input' ? input : output;
}

/**
 * The tokens a call (or a change to its charge) takes: {@link chargeOf} in `tokens`.
 *
 * @example
 * ```ts
 * tokensOf({ input: 1_200, output: 256 }); // 1456
 * ```
 */
export function tokensOf(charge: { readonly input: number; readonly output: number }): number {
  return chargeOf('tokens', charge.input, charge.output);
}

/**
 * The room a limit of `value` has left with `used` counted, for a call that keeps `admission`'s
 * `reserve` (a batch call's headroom for interactive traffic; without one the whole limit): the
 * call fits when its charge is at most this. `Infinity` when no limit is in force (`value` 0).
 * Every counter answers room, fits and waits by it, and the hot row keeps what it answers.
 *
 * @example
 * ```ts
 * roomLeft(1_000, 600, { input: 10, output: 0, reserve: 0.15 }); // 250
 * ```
 */
export function roomLeft(value: number, used: number, admission?: Admission): number {
  if (!(value > 0)) return Infinity;
  const reserve = admission?.reserve;
  return (reserve === undefined || reserve <= 0 ? value : value * (1 - reserve)) - used;
}

/**
 * How an upstream reconciles its admission charge:
 * - `reserve` (Azure OpenAI): prompt + output cap is charged at admission and kept for the minute;
 *   the answer only corrects the prompt estimate, the unused part of the cap is not refunded;
 * - `actual` (Claude on Foundry): input and the expected output are charged at admission and
 *   adjusted to what the answer used; cache writes count as input, cache reads do not (unless
 *   `cacheReadsCountInput`).
 *
 * @example
 * ```ts
 * const policy: ChargePolicy = provider === 'openai' ? 'reserve' : 'actual';
 * ```
 */
export type ChargePolicy = 'reserve' | 'actual';

/**
 * What an answer's usage changes in the charge of an admitted call, as the upstream reconciles
 * (see {@link ChargePolicy}): input and output tokens to add (negative: to give back). Written
 * into `into` when given (a ledger's own, read at once: every answer is reconciled).
 *
 * @example
 * ```ts
 * reconcile('reserve', { input: 100, output: 500 }, { input: 120, output: 40 }); // { input: 20, output: 0 }
 * ```
 */
export function reconcile(
  policy: ChargePolicy,
  admission: Admission,
  usage: TokenUsage,
  cacheReadsCountInput = false,
  into: { input: number; output: number } = { input: 0, output: 0 },
): { input: number; output: number } {
  const input = usage.input - admission.input;
  if (policy === 'reserve') {
    // The output cap stays charged for the minute; only output beyond what was reserved counts.
    into.input = input;
    into.output =
      admission.output > 0 ? Math.max(0, usage.output - admission.output) : usage.output;
    return into;
  }
  const cached = (usage.cacheWrite ?? 0) + (cacheReadsCountInput ? (usage.cacheRead ?? 0) : 0);
  into.input = input + cached;
  into.output = usage.output - admission.output;
  return into;
}

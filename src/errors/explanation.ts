/** The most deployments a message names; the structured list holds up to 100. */
const MAX_IN_MESSAGE = 6;

/**
 * Why a deployment did not take a call:
 * - `no_room`: its quota is full by the upstream's count until `retryInMs` from now;
 * - `cooling`: it is avoided after a 429, connection errors, 5xx or a mark-down by hand, for
 *   `retryInMs` more (`detail` says why);
 * - `in_flight_cap`: every slot under its `maxInFlight` cap is taken;
 * - `tags`: it lacks a tag the call requires;
 * - `too_large`: the call's admission charge is above one of its limits, now and always;
 * - `tried`: this call already failed there.
 */
export type PassedOverReason =
  'no_room' | 'cooling' | 'in_flight_cap' | 'tags' | 'too_large' | 'tried';

/**
 * One deployment a call could not use, and why: what the switchboard's own 429 and
 * `SwitchboardError` carry as `explanations`. Names, reasons and times only: no URL, no key.
 *
 * @example
 * ```ts
 * const e: DeploymentExplanation = {
 *   deployment: 'us-east', model: 'gpt-4o', reason: 'tags', detail: 'lacks tag eu',
 * };
 * ```
 */
export interface DeploymentExplanation {
  deployment: string;
  /** The model asked of it: the call's, or the fallback standing in for it. */
  model: string;
  reason: PassedOverReason;
  /** ms until it is expected to take the call (`no_room`, `cooling`, `in_flight_cap`). */
  retryInMs?: number;
  /** A few words for people: `tpm full`, `cooling after rate_limit`, `lacks tag eu`. */
  detail: string;
}

/**
 * The explanations in a few words for an error message: `eu-west: quota full, room in 1200 ms;
 * us-east: lacks tag eu`, the first {@link MAX_IN_MESSAGE} and how many more.
 *
 * @example
 * ```ts
 * explanationText(explain(registry, 'gpt-4o', undefined, undefined, admission));
 * ```
 */
export function explanationText(list: readonly DeploymentExplanation[]): string {
  const shown = list.slice(0, MAX_IN_MESSAGE).map((e) => {
    const when = e.retryInMs === undefined ? '' : `, ready in ${e.retryInMs} ms`;
    return `${e.deployment}${e.model === list[0]!.model ? '' : ` (${e.model})`}: ${e.detail}${when}`;
  });
  const more = list.length > MAX_IN_MESSAGE ? `; and ${list.length - MAX_IN_MESSAGE} more` : '';
  return shown.join('; ') + more;
}

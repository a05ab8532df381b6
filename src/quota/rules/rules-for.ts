import { ANTHROPIC } from './anthropic';
import { AZURE_PTU } from './azure-ptu';
import { AZURE_STANDARD } from './azure-standard';
import { OPENAI } from './openai';
import type { QuotaRules, RulesKind } from './quota-rules';

const RULES: Readonly<Record<RulesKind, QuotaRules>> = Object.freeze({
  azure: AZURE_STANDARD,
  'azure-ptu': AZURE_PTU,
  openai: OPENAI,
  anthropic: ANTHROPIC,
});

/**
 * The rules of one kind of upstream (see `upstreamKind` for which a deployment is); a
 * `provisioned` model on Azure follows the PTU's.
 *
 * @example
 * ```ts
 * rulesFor(upstreamKind('openai', baseURL), model.provisioned === true);
 * ```
 */
export function rulesFor(kind: RulesKind, provisioned = false): QuotaRules {
  return provisioned && kind !== 'anthropic' ? RULES['azure-ptu'] : RULES[kind];
}

/**
 * Output tokens charged for each output of a call without a cap, per kind of upstream, until
 * `outputReservation` is configured or the upstream's answers show its own reservation (each
 * rules module says why its value).
 *
 * @example
 * ```ts
 * DEFAULT_OUTPUT_RESERVATION.azure; // 648
 * ```
 */
export const DEFAULT_OUTPUT_RESERVATION: Readonly<
  Record<'azure' | 'openai' | 'anthropic', number>
> = Object.freeze({
  azure: AZURE_STANDARD.reservation,
  openai: OPENAI.reservation,
  anthropic: ANTHROPIC.reservation,
});

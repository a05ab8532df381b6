import type { ApiAdapter } from '../providers/adapter';
import type { Provider } from '../types';
import { refusalFor } from './cross-vendor';
import type { Refusal } from './refusal';

/**
 * A fallback skipped for one call because the call cannot be said in that model's API.
 *
 * @example
 * ```ts
 * const skipped: SkippedFallback = { model: 'claude-sonnet-5', field: 'n', why: 'Claude answers one choice per call' };
 * ```
 */
export interface SkippedFallback extends Refusal {
  readonly model: string;
}

/**
 * The fallbacks of one call that it may go to: those served through the caller's own API, and
 * those of the other vendor that the call translates to; the others are skipped, with the field
 * that stopped each. The list is returned as it is when nothing is skipped (most calls).
 *
 * @example
 * ```ts
 * translatableFallbacks(chatCompletions, 'create', { model: 'gpt-4o', messages, n: 2 },
 *   ['claude-sonnet-5'], providers);
 * // { fallbacks: undefined, skipped: [{ model: 'claude-sonnet-5', field: 'n', ... }] }
 * ```
 */
export function translatableFallbacks(
  adapter: ApiAdapter,
  op: string,
  body: Record<string, unknown>,
  fallbacks: readonly string[],
  providers: ReadonlyMap<string, Provider>,
): { fallbacks: readonly string[] | undefined; skipped: SkippedFallback[] | undefined } {
  let kept: string[] | undefined;
  let skipped: SkippedFallback[] | undefined;
  // One refusal per provider: the body is the same for every model of it.
  const verdicts = new Map<Provider, Refusal | undefined>();
  fallbacks.forEach((model, i) => {
    const provider = providers.get(model);
    let refusal: Refusal | undefined;
    if (provider !== undefined && provider !== adapter.provider) {
      if (!verdicts.has(provider)) verdicts.set(provider, refusalFor(adapter, op, body, provider));
      refusal = verdicts.get(provider);
    }
    if (refusal === undefined) {
      kept?.push(model);
      return;
    }
    kept ??= fallbacks.slice(0, i);
    (skipped ??= []).push({ model, ...refusal });
  });
  if (kept === undefined) return { fallbacks, skipped: undefined };
  return { fallbacks: kept.length > 0 ? kept : undefined, skipped };
}

/**
 * The sentence an error of the switchboard's gets when a call's fallbacks were skipped for want
 * of a translation: each fallback and the field that blocked it.
 *
 * @example
 * ```ts
 * skippedSentence([{ model: 'claude-sonnet-5', field: 'n', why: 'Claude answers one choice per call' }]);
 * // " Fallback claude-sonnet-5 was skipped: the call's n cannot be translated (Claude answers one choice per call)."
 * ```
 */
export function skippedSentence(skipped: readonly SkippedFallback[]): string {
  return skipped
    .map(
      (s) =>
        ` Fallback ${s.model} was skipped: the call's ${s.field} cannot be translated (${s.why}).`,
    )
    .join('');
}

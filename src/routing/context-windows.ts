import { tokensOf, type Admission } from '../quota/admission';
import type { PreparedRequest } from '../providers/attempt-types';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import { SwitchboardError } from '../switchboard.error';

/**
 * Per model with a `contextWindow`, its window in tokens; `undefined` when no model has one, so
 * that a call checks nothing.
 *
 * @example
 * ```ts
 * contextWindows(registry); // Map { 'gpt-4o-mini' => 8000, 'gpt-4o' => 128000 }
 * ```
 */
export function contextWindows(
  registry: DeploymentRegistry,
): ReadonlyMap<string, number> | undefined {
  let windows: Map<string, number> | undefined;
  for (const [model, pool] of registry.pools) {
    // One model, one window: the configuration check holds its deployments to the same one.
    const window = pool[0]!.models.get(model)!.contextWindow;
    if (Number.isFinite(window)) (windows ??= new Map()).set(model, window);
  }
  return windows;
}

/** Tokens a call may come to: its prompt estimate and the output it may ask for. */
export function tokensNeeded(admission: Admission): number {
  return tokensOf(admission);
}

/** Whether `model`'s window (if it has one) holds `need` tokens. */
export function fits(
  windows: ReadonlyMap<string, number> | undefined,
  model: string,
  need: number,
): boolean {
  const window = windows?.get(model);
  return window === undefined || need <= window;
}

/**
 * A call too long for `model` and for every one of its `fallbacks`: the sizes, and that nothing
 * was sent.
 *
 * @example
 * ```ts
 * throw tooLongError('gpt-4o-mini', { input: 20_000, output: 500 }, windows, ['gpt-4o']);
 * ```
 */
function tooLongError(
  model: string,
  admission: Admission,
  windows: ReadonlyMap<string, number>,
  fallbacks: readonly string[] | undefined,
): SwitchboardError {
  const need = tokensNeeded(admission);
  const others = (fallbacks ?? []).map((m) => `${m}: ${windows.get(m) ?? 'no window configured'}`);
  return new SwitchboardError(
    `A call to ${model} needs about ${need} tokens (${admission.input} prompt estimate + ` +
      `${admission.output} max_tokens), more than its context window of ${windows.get(model)}` +
      (others.length > 0 ? ` and than its fallbacks' (${others.join(', ')})` : '') +
      `. Shorten the prompt or lower max_tokens${others.length > 0 ? '' : ', or configure a fallback with a larger window'}; nothing was sent.`,
  );
}

/**
 * For a call too long for `model`, the fallbacks whose context window holds it (the first with
 * room takes it); `undefined` when it fits, or no model has a window. None: a
 * `SwitchboardError` naming the sizes.
 *
 * @example
 * ```ts
 * widerModels(windows, 'gpt-4o-mini', request, ['gpt-4.1']); // ['gpt-4.1'] for a long prompt
 * ```
 */
export function widerModels(
  windows: ReadonlyMap<string, number> | undefined,
  model: string,
  request: PreparedRequest,
  fallbacks: readonly string[] | undefined,
): string[] | undefined {
  if (windows === undefined || !request.metered) return undefined;
  const need = tokensNeeded(request.admission);
  if (fits(windows, model, need)) return undefined;
  const wider = (fallbacks ?? []).filter((m) => fits(windows, m, need));
  if (wider.length === 0) throw tooLongError(model, request.admission, windows, fallbacks);
  return wider;
}

import type { SwitchboardOptions } from './switchboard-options';
import type { ConfigProblem } from '../types';

/**
 * Problems with `options.fallbacks` and `options.contentFilterFallbacks`, each at the entry it
 * is about: a model nobody serves, a chain that comes back to where it started (a content-filter
 * list is not chained: there, only a model naming itself). Run it on options that passed the
 * schema.
 *
 * @example
 * ```ts
 * checkFallbacks({ deployments, fallbacks: { 'gpt-4o': ['gpt-4o'] } });
 * // [{ path: ['fallbacks', 'gpt-4o', 0], message: "'gpt-4o' makes a cycle: gpt-4o -> gpt-4o; ..." }]
 * ```
 */
export function checkFallbacks(options: SwitchboardOptions): ConfigProblem[] {
  const { fallbacks, contentFilterFallbacks } = options;
  if (fallbacks === undefined && contentFilterFallbacks === undefined) return [];
  const providers = new Map<string, string>();
  for (const d of options.deployments) {
    for (const m of d.models) if (!providers.has(m.name)) providers.set(m.name, d.provider);
  }
  const problems: ConfigProblem[] = [];
  if (contentFilterFallbacks !== undefined) {
    problems.push(...checkEntries(contentFilterFallbacks, 'contentFilterFallbacks', providers));
    // Not chained (each list is tried as it stands), so only a model naming itself is a mistake.
    for (const [model, list] of Object.entries(contentFilterFallbacks)) {
      list.forEach((fallback, i) => {
        if (fallback !== model) return;
        problems.push({
          path: ['contentFilterFallbacks', model, i],
          message: `'${model}' names itself: list other models, whose deployments filter by another policy`,
        });
      });
    }
  }
  if (fallbacks === undefined) return problems;
  problems.push(...checkEntries(fallbacks, 'fallbacks', providers));
  // Depth-first over the fallback graph: a model met again on the current path closes a cycle.
  const done = new Set<string>();
  const reported = new Set<string>();
  const visit = (model: string, path: string[]): void => {
    if (done.has(model)) return;
    const list = listOf(fallbacks, model);
    list.forEach((next, i) => {
      const start = path.indexOf(next);
      if (start >= 0 || next === model) {
        const cycle = [...path.slice(start >= 0 ? start : path.length), model, next];
        const key = [...cycle].sort().join('\0');
        if (!reported.has(key)) {
          reported.add(key);
          problems.push({
            path: ['fallbacks', model, i],
            message: `'${next}' makes a cycle: ${cycle.join(' -> ')}; a model cannot fall back to itself, remove one of the links`,
          });
        }
        return;
      }
      visit(next, [...path, model]);
    });
    done.add(model);
  };
  for (const model of Object.keys(fallbacks)) visit(model, []);
  return problems;
}

/**
 * Per model, every model a call may fall back to, in order: each listed fallback followed by its
 * own fallbacks (depth first), each model once, the requested one never. Models without
 * fallbacks are left out. Expects options that passed {@link checkFallbacks}.
 *
 * @example
 * ```ts
 * resolveFallbacks({ 'gpt-4o': ['gpt-4o-mini'], 'gpt-4o-mini': ['gpt-35-turbo'] });
 * // Map { 'gpt-4o' => ['gpt-4o-mini', 'gpt-35-turbo'], 'gpt-4o-mini' => ['gpt-35-turbo'] }
 * ```
 */
export function resolveFallbacks(
  fallbacks: Readonly<Record<string, readonly string[]>> | undefined,
): ReadonlyMap<string, readonly string[]> {
  const out = new Map<string, readonly string[]>();
  if (fallbacks === undefined) return out;
  for (const model of Object.keys(fallbacks)) {
    const order: string[] = [];
    const seen = new Set<string>([model]);
    const walk = (m: string): void => {
      for (const next of listOf(fallbacks, m)) {
        if (seen.has(next)) continue;
        seen.add(next);
        order.push(next);
        walk(next);
      }
    };
    walk(model);
    if (order.length > 0) out.set(model, order);
  }
  return out;
}

// Own keys only: a model may well be called `constructor`.
function listOf(
  fallbacks: Readonly<Record<string, readonly string[]>>,
  model: string,
): readonly string[] {
  return Object.hasOwn(fallbacks, model) ? fallbacks[model]! : [];
}

/**
 * Each entry of a map of fallbacks names models that are served. A fallback may be the other
 * provider's: a call is then translated into its API, or skipped there when it cannot be.
 */
function checkEntries(
  map: Readonly<Record<string, readonly string[]>>,
  key: string,
  providers: ReadonlyMap<string, string>,
): ConfigProblem[] {
  const served = [...providers.keys()].join(', ');
  const problems: ConfigProblem[] = [];
  for (const [model, list] of Object.entries(map)) {
    if (!providers.has(model)) {
      problems.push({
        path: [key, model],
        message: `names a model no deployment serves: use one of ${served}, or add a deployment for it`,
      });
    }
    list.forEach((fallback, i) => {
      const path = [key, model, i];
      const other = providers.get(fallback);
      if (other === undefined) {
        problems.push({
          path,
          message: `'${fallback}' is served by no deployment: add a deployment that serves it, or remove it from the list (served: ${served})`,
        });
      }
    });
  }
  return problems;
}

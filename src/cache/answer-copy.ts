/** Makes a fresh copy of one value shaped like the template its plan was made from. */
type CopyPlan<T = unknown> = (value: T) => T;

type Json = Record<string, unknown>;

/**
 * A plan for copying `template` (parsed JSON: plain objects, arrays, strings, numbers, booleans,
 * `null`) again and again, made once per kept answer. A copy is a new object or array at every
 * level, so a caller that changes its answer changes neither the template nor the next caller's
 * copy; strings and numbers are shared, as they cannot change. Each level is copied in one step
 * (`{ ...o }`, `slice()`), and only the members that hold objects are visited: an embedding's
 * 1 536 numbers are one `slice()`. The plan must only be given `template` itself, which its owner
 * never hands out: a value of another shape would be copied only where `template` is nested.
 *
 * @example
 * ```ts
 * const template = JSON.parse(entry.body);
 * const copy = copyPlan(template);
 * const answer = copy(template); // equal to template, sharing no object with it
 * ```
 */
export function copyPlan<T>(template: T): CopyPlan<T> {
  return (planOf(template) ?? same) as CopyPlan<T>;
}

const same = <T>(value: T): T => value;

function planOf(value: unknown): CopyPlan | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  return Array.isArray(value) ? arrayPlan(value) : objectPlan(value as Json);
}

function arrayPlan(array: readonly unknown[]): CopyPlan {
  const at: number[] = [];
  const plans: CopyPlan[] = [];
  for (let i = 0; i < array.length; i++) {
    const plan = planOf(array[i]);
    if (plan === undefined) continue;
    at.push(i);
    plans.push(plan);
  }
  if (at.length === 0) return (value) => (value as unknown[]).slice();
  return (value) => {
    const from = value as unknown[];
    const out = from.slice();
    for (let i = 0; i < at.length; i++) out[at[i]!] = plans[i]!(from[at[i]!]);
    return out;
  };
}

function objectPlan(object: Json): CopyPlan {
  const keys: string[] = [];
  const plans: CopyPlan[] = [];
  for (const key of Object.keys(object)) {
    const plan = planOf(object[key]);
    if (plan === undefined) continue;
    // Assigning `__proto__` would set the copy's prototype: JSON.parse made it an own member.
    if (key === '__proto__') return definingPlan(object);
    keys.push(key);
    plans.push(plan);
  }
  if (keys.length === 0) return (value) => ({ ...(value as Json) });
  return (value) => {
    const from = value as Json;
    const out = { ...from };
    for (let i = 0; i < keys.length; i++) out[keys[i]!] = plans[i]!(from[keys[i]!]);
    return out;
  };
}

/** The plan of an object with an own `__proto__` member: every member defined, none assigned. */
function definingPlan(object: Json): CopyPlan {
  const members = Object.keys(object).map((key) => ({ key, plan: planOf(object[key]) ?? same }));
  return (value) => {
    const from = value as Json;
    const out: Json = {};
    for (const { key, plan } of members) {
      Object.defineProperty(out, key, {
        value: plan(from[key]),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  };
}

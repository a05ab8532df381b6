/** Deepest nesting a request is printed, copied and compared to; as the key's bound. */
const MAX_DEPTH = 64;
/** Characters of a string a print reads: its length, 16 spread over it, and its last. */
const SAMPLES = 16;
/**
 * A 17-bit odd multiplier: the product of a 32-bit value and it is exact in a double, so
 * `| 0` keeps its low 32 bits, as `Math.imul` would (which some hosts, such as Jest's VM
 * contexts, make a slow call).
 */
const MULTIPLIER = 0x1b873;
const mix = (h: number, x: number): number => ((h ^ x) * MULTIPLIER) | 0;

/**
 * A call as the memory store finds it again without its key: who asks, the API and operation,
 * the body as the upstream receives it, and a 32-bit print of all four. Equal requests have
 * equal prints; requests with equal prints are compared in full ({@link sameRequest}).
 *
 * @example
 * ```ts
 * const request = requestOf('acme', 'chat.completions', 'create', body);
 * ```
 */
export interface RequestKey {
  readonly print: number;
  readonly tenant: string;
  readonly api: string;
  readonly op: string;
  readonly body: unknown;
}

/**
 * A request kept beside the entry that answers it: its body copied (plain JSON data only, so
 * that the caller changing its params later changes nothing here), and the bytes the copy takes.
 *
 * @example
 * ```ts
 * const kept = keptRequest(request); // undefined for a body that is not plain JSON data
 * ```
 */
export interface KeptRequest extends RequestKey {
  readonly bytes: number;
}

/**
 * The {@link RequestKey} of a call. Its print reads the shape of the body, every number and
 * key, and a sample of each string's characters: it costs a walk over the body's members, not
 * over its text, and allocates nothing but the key itself.
 *
 * @example
 * ```ts
 * requestOf('acme', 'chat.completions', 'create', { model: 'gpt-4o-mini', messages }).print; // -1_517_289_455
 * ```
 */
export function requestOf(tenant: string, api: string, op: string, body: unknown): RequestKey {
  const h = mix(mix(mix(0x811c9dc5, printText(tenant)), printText(api)), printText(op));
  return { print: printOf(body, h, 0), tenant, api, op, body };
}

/**
 * `request` kept: its body copied, or `undefined` when the body holds anything but plain JSON
 * data (objects of `Object.prototype` or none, arrays, strings, finite numbers, booleans, `null`;
 * members set to `undefined` are left out, as JSON leaves them) or nests past 64 levels. Such a call is still cached, only found by its key.
 *
 * @example
 * ```ts
 * keptRequest(requestOf('', 'embeddings', 'create', { model, input: 'x' }))?.bytes; // 120
 * ```
 */
export function keptRequest(request: RequestKey): KeptRequest | undefined {
  const size = { bytes: 0 };
  const body = plainCopy(request.body, 0, size);
  if (body === NOT_PLAIN) return undefined;
  const { print, tenant, api, op } = request;
  const bytes = size.bytes + (tenant.length + api.length + op.length) * 2 + 64;
  return { print, tenant, api, op, body, bytes };
}

/**
 * Whether `request` is the request `kept` was made of: the same tenant, API and operation, and a
 * body with the same members holding the same values, in whatever order its keys were written.
 * Only plain objects and arrays compare equal to kept ones, so the two bodies are the same JSON
 * and the same canonical body.
 *
 * @example
 * ```ts
 * sameRequest(kept, requestOf('acme', 'chat.completions', 'create', body)); // true
 * ```
 */
export function sameRequest(kept: KeptRequest, request: RequestKey): boolean {
  return (
    kept.print === request.print &&
    kept.tenant === request.tenant &&
    kept.api === request.api &&
    kept.op === request.op &&
    sameValue(request.body, kept.body)
  );
}

function printText(text: string): number {
  const n = text.length;
  let h = mix(0x811c9dc5, n);
  const step = n > SAMPLES ? (n / SAMPLES) | 0 : 1;
  for (let i = 0; i < n; i += step) h = mix(h, text.charCodeAt(i));
  return n === 0 ? h : mix(h, text.charCodeAt(n - 1));
}

function printOf(value: unknown, h: number, depth: number): number {
  switch (typeof value) {
    case 'string':
      return mix(h ^ 1, printText(value));
    case 'number':
      return mix(mix(h ^ 2, value | 0), (value * 65_536) | 0);
    case 'boolean':
      return mix(h, value ? 3 : 4);
    case 'object':
      break;
    default:
      return mix(h, 5);
  }
  if (value === null) return mix(h, 6);
  // Deeper levels are never kept (see keptRequest): one print for all of them is enough.
  if (depth >= MAX_DEPTH) return mix(h, 7);
  if (Array.isArray(value)) {
    h = mix(h, 8 + value.length);
    for (let i = 0; i < value.length; i++) h = printOf(value[i], h, depth + 1);
    return h;
  }
  // Members are summed: the order their keys were written in does not change the print.
  let sum = 0;
  const object = value as Record<string, unknown>;
  for (const key in object) {
    const member = object[key];
    // As in JSON: a member set to undefined is no member.
    if (member !== undefined) sum = (sum + printOf(member, printText(key), depth + 1)) | 0;
  }
  return mix(h ^ 9, sum);
}

const NOT_PLAIN = Symbol('notPlain');

function plainCopy(value: unknown, depth: number, size: { bytes: number }): unknown {
  switch (typeof value) {
    case 'string':
      size.bytes += value.length * 2 + 16;
      return value;
    case 'number':
      size.bytes += 16;
      return Number.isFinite(value) ? value : NOT_PLAIN;
    case 'boolean':
      size.bytes += 16;
      return value;
    case 'object':
      break;
    default:
      return NOT_PLAIN;
  }
  if (value === null) return null;
  if (depth >= MAX_DEPTH) return NOT_PLAIN;
  size.bytes += 32;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) {
      const item = plainCopy(value[i], depth + 1, size);
      if (item === NOT_PLAIN) return NOT_PLAIN;
      out[i] = item;
    }
    return out;
  }
  if (!isPlainObject(value)) return NOT_PLAIN;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const from = (value as Record<string, unknown>)[key];
    if (from === undefined) continue;
    const member = plainCopy(from, depth + 1, size);
    if (member === NOT_PLAIN) return NOT_PLAIN;
    size.bytes += key.length * 2 + 16;
    Object.defineProperty(out, key, {
      value: member,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Whether `value` equals `kept` (plain data, see {@link keptRequest}) member for member. */
function sameValue(value: unknown, kept: unknown): boolean {
  if (value === kept) return true;
  if (typeof kept !== 'object' || kept === null) return false;
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(kept)) {
    if (!Array.isArray(value) || value.length !== kept.length) return false;
    for (let i = 0; i < kept.length; i++) {
      if (!sameValue(value[i], kept[i])) return false;
    }
    return true;
  }
  if (Array.isArray(value) || !isPlainObject(value)) return false;
  const members = value as Record<string, unknown>;
  const keptMembers = kept as Record<string, unknown>;
  let count = 0;
  for (const key in members) {
    if (!Object.hasOwn(members, key)) return false;
    const member = members[key];
    if (member === undefined) continue;
    if (!Object.hasOwn(keptMembers, key) || !sameValue(member, keptMembers[key])) return false;
    count++;
  }
  for (const key in keptMembers) if (Object.hasOwn(keptMembers, key)) count--;
  return count === 0;
}

// Checks of single values that a wrong one would turn into a silent failure later: a duration
// Node's timers cannot hold, a port `fetch` will not connect to, a key no header can carry.
import { type z } from 'zod';

/**
 * The longest delay Node's timers hold: 2^31 - 1 ms (about 24.8 days). A longer one fires after
 * 1 ms (with a warning), so a timeout of 1e10 would expire every call at once.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A duration schema bounded by {@link MAX_TIMER_MS}, the message naming the bound.
 *
 * @example
 * ```ts
 * const timeout = timerMillis(z.number().int().positive());
 * timeout.safeParse(1e10).success; // false
 * ```
 */
export function timerMillis(schema: z.ZodNumber): z.ZodNumber {
  return schema.max(MAX_TIMER_MS, {
    error: `must be at most ${MAX_TIMER_MS} ms (about 24.8 days): Node's timers cannot wait longer`,
  });
}

/**
 * The ports `fetch` refuses to connect to (the Fetch standard's "bad port" list,
 * https://fetch.spec.whatwg.org/#port-blocking): a deployment there fails every call.
 */
export const FETCH_BLOCKED_PORTS: ReadonlySet<number> = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102,
  103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465,
  512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993,
  995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668,
  6669, 6679, 6697, 10080,
]);

/**
 * Why `fetch` would refuse every request to `url`, or undefined: its port is on the Fetch
 * standard's blocked list.
 *
 * @example
 * ```ts
 * blockedPortProblem('http://127.0.0.1:9/v1'); // 'names port 9, which fetch refuses to use (...)'
 * ```
 */
export function blockedPortProblem(url: string): string | undefined {
  let port: string;
  try {
    port = new URL(url).port;
  } catch {
    return undefined; // The URL check says what is wrong with it.
  }
  if (port === '' || !FETCH_BLOCKED_PORTS.has(Number(port))) return undefined;
  return (
    `names port ${port}, which fetch refuses to use (the Fetch standard's blocked ports): ` +
    'every call would fail with "bad port"; serve the deployment on another port'
  );
}

// Where providers read it too: below both folders, so that neither imports the other.
export { hasControlCharacter } from '../runtime/control-characters';

/** The message of a key with a control character: never the key itself. */
export const KEY_CONTROL_MESSAGE =
  'holds a control character (a line break, tab or NUL), which no HTTP header can carry: ' +
  'remove it (the key is not shown)';

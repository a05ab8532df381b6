/** How many characters of an upstream's error text reach a client, a log line or a span. */
export const UPSTREAM_TEXT_LIMIT = 512;

/** How many characters of a stack trace (its message first) a log line or a span keeps. */
export const STACK_LIMIT = 4_000;

/** What stands where a secret was. */
export const REDACTED = '[redacted]';

/** `Bearer <token>`, `Basic <token>`: an `Authorization` value, echoed. */
const AUTH_SCHEME = /\b(Bearer|Basic)\s+[\w.~+/=*-]+/gi;

/**
 * A name that says secret (`api-key`, `x-api-key`, `access_token`, `client_secret`, `password`,
 * `authorization`, `sig`...) followed by `:` or `=` and a value: a header or a query parameter,
 * echoed. The name stays, the value goes. Not `tokens` (`max_tokens: Field required`), nor a
 * number.
 */
const NAMED_SECRET =
  /\b([\w-]*(?:api[-_]?key|token(?!s)|secret|password|passwd|authorization|signature|sig|credentials?)["']?\s*[:=]\s*["']?)(?!\[redacted\]|(?:Bearer|Basic)\s|\d+\b)[^\s"',;&}\]]+/gi;

/** A header value `fetch` refused, quoted whole in its message (a key with a line break). */
const REFUSED_HEADER_VALUE = /"[^"]*"(?= is an invalid header value)/g;

/** Provider key formats: `sk-...`, `sk-proj-...`, `sk-ant-...`, masked (`sk-proj-****WXYZ`) too. */
const PROVIDER_KEY = /\b(?:sk|pk|rk)-[\w*-]{6,}/g;

/** A run of 32 or more hex digits (Azure's keys, signing keys). */
const LONG_HEX = /\b[0-9a-f]{32,}\b/gi;

/** A run of 32 or more base64 / base64url characters mixing cases and digits (keys, JWT parts). */
const LONG_TOKEN = /[A-Za-z0-9+/_-]{32,}={0,2}/g;

const looksRandom = (run: string): boolean =>
  /[a-z]/.test(run) && /[A-Z]/.test(run) && /[0-9]/.test(run);

/**
 * Upstream text as the switchboard lets it out, to a client, a log line or a span: anything
 * shaped like a credential replaced by `[redacted]` (`Bearer x`, `api-key: x`, `?sig=x`,
 * `sk-...` keys, masked ones included, runs of 32+ hex digits, 32+ character base64 tokens that
 * mix cases and digits, a header value `fetch` refused as invalid), then clipped to `max` characters with its length said. An upstream that
 * echoes the request's headers, or names the key it refused, passes none of it on.
 *
 * @example
 * ```ts
 * scrub('Incorrect API key provided: sk-proj-****WXYZ'); // 'Incorrect API key provided: [redacted]'
 * scrub('echo: api-key: 0123456789abcdef0123456789abcdef'); // 'echo: api-key: [redacted]'
 * ```
 */
export function scrub(text: unknown, max: number = UPSTREAM_TEXT_LIMIT): string {
  const whole = typeof text === 'string' ? text : String(text);
  // Bounded work on a huge text: what is past four times the clip is never shown anyway.
  const read = Math.max(64, max * 4);
  const out = whole
    .slice(0, read)
    .replace(REFUSED_HEADER_VALUE, `"${REDACTED}"`)
    .replace(AUTH_SCHEME, `$1 ${REDACTED}`)
    .replace(NAMED_SECRET, `$1${REDACTED}`)
    .replace(PROVIDER_KEY, REDACTED)
    .replace(LONG_HEX, REDACTED)
    .replace(LONG_TOKEN, (run) => (looksRandom(run) ? REDACTED : run));
  if (out.length <= max && whole.length <= read) return out;
  return `${out.slice(0, max)}… (${whole.length} characters)`;
}

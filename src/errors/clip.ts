/** How many characters of a client's string an error message repeats. */
export const ECHO_LIMIT = 64;

/**
 * A client's string as an error message may repeat it: whole when short, else its first
 * {@link ECHO_LIMIT} characters and its length. A message that echoed a 19 MB model name whole
 * would cost the server the memory and the client the download.
 *
 * @example
 * ```ts
 * clip('gpt-4o-mini'); // 'gpt-4o-mini'
 * clip('x'.repeat(1_000_000)); // 'xxxx…xxx… (1000000 characters)'
 * ```
 */
export function clip(value: unknown, max: number = ECHO_LIMIT): string {
  const text = typeof value === 'string' ? value : String(value);
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;
}

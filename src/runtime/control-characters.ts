/**
 * Whether a key holds a character no HTTP header can carry (a control character: CR, LF, NUL,
 * tab…): every call with it would fail, and the failure's message would quote it.
 *
 * @example
 * ```ts
 * hasControlCharacter('sk-abc\r\n'); // true
 * ```
 */
export function hasControlCharacter(value: string): boolean {
  // eslint-disable-next-line no-control-regex
  return /[\u0000-\u001f\u007f]/.test(value);
}

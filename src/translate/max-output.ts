/**
 * The documented maximum output (tokens) of Claude models, by name prefix, longest first: what a
 * translated call that set no cap asks Claude for, since the Messages API requires `max_tokens`.
 * From Anthropic's models overview; a model not listed gets {@link DEFAULT_MAX_OUTPUT}.
 */
const CLAUDE_MAX_OUTPUT: readonly (readonly [string, number])[] = [
  ['claude-opus-4-1', 32_000],
  ['claude-opus-4-0', 32_000],
  ['claude-opus-4-2025', 32_000],
  ['claude-opus-4', 64_000],
  ['claude-sonnet-4', 64_000],
  ['claude-haiku-4', 64_000],
  ['claude-3-7-sonnet', 64_000],
  ['claude-3-5-haiku', 8_192],
  ['claude-3-5-sonnet', 8_192],
];

/** What an unlisted model is asked for: the smallest cap current Claude models document. */
export const DEFAULT_MAX_OUTPUT = 8_192;

/**
 * `max_tokens` for a translated call to `model` that set no cap: the deployment's
 * `outputReservation` when it has one, else the model's documented maximum output.
 *
 * @example
 * ```ts
 * maxOutputOf('claude-sonnet-4-5', 0); // => 64000
 * maxOutputOf('claude-sonnet-5', 2048); // => 2048
 * ```
 */
export function maxOutputOf(model: string, reservation: number): number {
  if (reservation > 0) return reservation;
  for (const [prefix, tokens] of CLAUDE_MAX_OUTPUT) if (model.startsWith(prefix)) return tokens;
  return DEFAULT_MAX_OUTPUT;
}

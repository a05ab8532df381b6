import { documentedMaxOutput, UNKNOWN_MAX_OUTPUT } from '../tenants/max-output';

/** What a model whose maximum output is not documented is asked for: the smallest cap current Claude models document. */
const DEFAULT_MAX_OUTPUT = 8_192;

/**
 * `max_tokens` for a translated call to `model` that set no cap (the Messages API requires one):
 * the deployment's `outputReservation` when it has one, else the model's documented maximum
 * output, else {@link DEFAULT_MAX_OUTPUT} (asking more than a model allows is a 400).
 *
 * @example
 * ```ts
 * maxOutputOf('claude-sonnet-4-5', 0); // => 64000
 * maxOutputOf('claude-sonnet-5', 2048); // => 2048
 * ```
 */
export function maxOutputOf(model: string, reservation: number): number {
  if (reservation > 0) return reservation;
  const documented = documentedMaxOutput(model);
  return documented === UNKNOWN_MAX_OUTPUT ? DEFAULT_MAX_OUTPUT : documented;
}

import type { Lane } from '../scheduling/lanes';

/**
 * One finished call as `recordTraffic` writes it, one JSON object per line: when the caller made
 * it, where it was answered and what the upstream reported it used. Never any prompt or answer
 * content. `input_tokens` is the whole prompt as the upstream counted it (cached part included),
 * `cached_tokens` the part read from its prompt cache; `latency_ms` is the answering upstream's
 * time, from send to the last byte, not the wait for room before it. A call that failed for its
 * caller has the `status` of its last error (0 when no HTTP answer came), its prompt estimate as
 * `input_tokens` and no output.
 *
 * @example
 * ```ts
 * const line: TrafficLine = {
 *   t: 1767225600000, model: 'gpt-4o-mini', deployment: 'east', input_tokens: 1000,
 *   output_tokens: 200, max_tokens: 300, lane: 'interactive', status: 200, latency_ms: 840,
 * };
 * ```
 */
export interface TrafficLine {
  /** When the caller made the call (epoch ms). */
  t: number;
  /** The model the caller asked for. */
  model: string;
  /** The deployment that answered (or last failed); absent when none was tried. */
  deployment?: string;
  input_tokens: number;
  cached_tokens?: number;
  output_tokens: number;
  /** The call's output cap (`max_completion_tokens` / `max_tokens`), when it set one. */
  max_tokens?: number;
  lane?: Lane;
  tenant?: string;
  /** 200, or the HTTP status of the error the caller got (0: none came). */
  status?: number;
  latency_ms?: number;
}

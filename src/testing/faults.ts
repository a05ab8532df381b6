/**
 * Faults a simulated deployment plays instead of its normal answer: their type, validation and
 * queue.
 */

/**
 * A failure a simulated deployment plays instead of its normal answer; queue them with
 * {@link SimulatedDeployment.fail}.
 *
 * - `status`: an error answer in the provider's shape with `status`, optional `retry-after`
 *   (seconds) / `retry-after-ms` headers, `message` and `code`.
 * - `reset`: the TCP connection is reset before any answer.
 * - `hang`: no answer at all, until the client gives up or the upstream closes.
 * - `drop-mid-stream`: streamed requests get `afterEvents` SSE events (default 2, always fewer
 *   than the full answer) before the connection is destroyed; other requests get the headers and
 *   half of the body.
 * - `malformed`: a 200 whose JSON body is cut short, or for streams one good event followed by a
 *   `data:` line with broken JSON.
 * - `stall`: the answer starts and then stops: streamed requests get the headers and
 *   `afterEvents` SSE events (default 0: a stream that never starts), other requests the headers
 *   alone; then nothing for `ms` (default: until the client closes the connection), after which
 *   the rest of the answer follows as usual.
 * - `content-filter`: Azure OpenAI's content filter refuses. `on: 'prompt'` (default) answers
 *   Azure's 400 `content_filter` with its `innererror.content_filter_result`; `on: 'completion'`
 *   answers 200 with the output withheld and `finish_reason: 'content_filter'` (Chat Completions;
 *   Responses: `status: 'incomplete'`, reason `content_filter`). `category` names the category
 *   that was filtered (default `'hate'`). On Anthropic routes the prompt form is a 400
 *   `invalid_request_error`.
 *
 * @example
 * ```ts
 * deployment.fail({ kind: 'status', status: 429, retryAfter: 1, retryAfterMs: 250 });
 * deployment.fail({ kind: 'reset' }, 3);
 * deployment.fail({ kind: 'status', status: 404, code: 'DeploymentNotFound' });
 * deployment.fail({ kind: 'drop-mid-stream', afterEvents: 4 });
 * deployment.fail({ kind: 'stall', afterEvents: 2, ms: 5_000 });
 * deployment.fail({ kind: 'content-filter', category: 'violence' });
 * ```
 */
export type SimulatedFault =
  | {
      kind: 'status';
      status: number;
      retryAfter?: number;
      retryAfterMs?: number;
      message?: string;
      /** The error body's `error.code` (both routes), such as Azure's `'DeploymentNotFound'`. */
      code?: string;
    }
  | { kind: 'reset' }
  | { kind: 'hang' }
  | { kind: 'drop-mid-stream'; afterEvents?: number }
  | { kind: 'malformed' }
  | { kind: 'stall'; afterEvents?: number; ms?: number }
  | { kind: 'content-filter'; on?: 'prompt' | 'completion'; category?: ContentFilterCategory };

/** The categories of Azure OpenAI's content filter that grade a severity. */
export type ContentFilterCategory = 'hate' | 'self_harm' | 'sexual' | 'violence';

/** Every category {@link SimulatedFault} `content-filter` may name. */
export const CONTENT_FILTER_CATEGORIES: readonly ContentFilterCategory[] = [
  'hate',
  'self_harm',
  'sexual',
  'violence',
];

/** A queued fault and how many more requests it affects (internal). */
export interface QueuedFault {
  fault: SimulatedFault;
  remaining: number;
}

/** Throws a RangeError naming `what` unless `value` is undefined or a finite number >= 0. */
function checkNonNegative(value: number | undefined, what: string): void {
  if (value !== undefined && !(Number.isFinite(value) && value >= 0)) {
    throw new RangeError(`${what} must be a finite number >= 0, got ${String(value)}`);
  }
}

/** Checks `fault` and `times` as {@link SimulatedDeployment.fail} takes them; throws otherwise. */
export function validateFault(fault: SimulatedFault, times: number): void {
  if (!(times === Infinity || (Number.isInteger(times) && times > 0))) {
    throw new RangeError(`times must be a positive integer or Infinity, got ${String(times)}`);
  }
  switch (fault.kind) {
    case 'status':
      if (!Number.isInteger(fault.status) || fault.status < 400 || fault.status > 599) {
        throw new RangeError(`fault status must be an integer in 400..599, got ${fault.status}`);
      }
      checkNonNegative(fault.retryAfter, 'retryAfter');
      checkNonNegative(fault.retryAfterMs, 'retryAfterMs');
      break;
    case 'drop-mid-stream':
      checkNonNegative(fault.afterEvents, 'afterEvents');
      break;
    case 'stall':
      checkNonNegative(fault.afterEvents, 'afterEvents');
      checkNonNegative(fault.ms, 'ms');
      break;
    case 'content-filter':
      if (fault.on !== undefined && fault.on !== 'prompt' && fault.on !== 'completion') {
        throw new RangeError(
          `content-filter on must be 'prompt' or 'completion', got ${String(fault.on)}`,
        );
      }
      if (fault.category !== undefined && !CONTENT_FILTER_CATEGORIES.includes(fault.category)) {
        throw new RangeError(
          `content-filter category must be one of ${CONTENT_FILTER_CATEGORIES.join(', ')}, got ${String(fault.category)}`,
        );
      }
      break;
    case 'reset':
    case 'hang':
    case 'malformed':
      break;
    default:
      throw new TypeError(
        `Unknown fault kind ${JSON.stringify((fault as { kind: unknown }).kind)}`,
      );
  }
}

/** Takes the next fault of `queue` for one request, if any. */
export function takeFault(queue: QueuedFault[]): SimulatedFault | undefined {
  const head = queue[0];
  if (!head) return undefined;
  head.remaining--;
  if (head.remaining <= 0) queue.shift();
  return head.fault;
}

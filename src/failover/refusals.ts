import type { ProviderErrors } from '../registry/deployment';

/**
 * Refusals that say nothing about the deployment and everything about the call on this model: a
 * prompt too long for its context window, a prompt or an answer Azure's content filter stopped.
 * Another deployment of the same model would refuse it alike; another model may take it.
 */
export type Refusal = 'context_window' | 'content_filter';

/** What Anthropic says of a prompt beyond the model's window (alone, or with `max_tokens`). */
const ANTHROPIC_TOO_LONG = /prompt is too long|exceed context limit/i;

/**
 * Which {@link Refusal} an error of either SDK is, if any: a 400 `context_length_exceeded`
 * (OpenAI, Azure OpenAI) or Anthropic's "prompt is too long"; a 400 `content_filter` (Azure).
 *
 * @example
 * ```ts
 * refusalOf(error, deployment.errors); // 'context_window' | 'content_filter' | undefined
 * ```
 */
export function refusalOf(error: unknown, errors: ProviderErrors): Refusal | undefined {
  if (!(error instanceof errors.APIError)) return undefined;
  const {
    status,
    code,
    error: body,
  } = error as Error & {
    status?: number;
    code?: unknown;
    error?: unknown;
  };
  if (status !== 400) return undefined;
  // The openai SDK keeps the body's `error` member (and its code); Anthropic's keeps the body.
  const inner = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  const bodyCode = code ?? (body as { code?: unknown } | undefined)?.code ?? inner?.code;
  if (bodyCode === 'context_length_exceeded') return 'context_window';
  if (bodyCode === 'content_filter') return 'content_filter';
  const message = typeof inner?.message === 'string' ? inner.message : error.message;
  return ANTHROPIC_TOO_LONG.test(message) ? 'context_window' : undefined;
}

/**
 * An answer whose output Azure's content filter withheld: a choice that finished with
 * `finish_reason: 'content_filter'` (Chat Completions), or a response left incomplete for that
 * reason (Responses).
 *
 * @example
 * ```ts
 * isFilteredAnswer({ choices: [{ finish_reason: 'content_filter' }] }); // => true
 * ```
 */
export function isFilteredAnswer(data: unknown): boolean {
  if (typeof data !== 'object' || data === null) return false;
  const { choices, incomplete_details: incomplete } = data as {
    choices?: unknown;
    incomplete_details?: { reason?: unknown } | null;
  };
  if (Array.isArray(choices)) {
    return choices.some(
      (c) => (c as { finish_reason?: unknown } | null)?.finish_reason === 'content_filter',
    );
  }
  return incomplete?.reason === 'content_filter';
}

/**
 * Azure OpenAI's content filter, in the shapes its answers take: the 400 `content_filter` that
 * refuses a prompt, and the answer whose output was withheld (`finish_reason: 'content_filter'`).
 */
import type { ContentFilterCategory } from '../faults';
import { CONTENT_FILTER_CATEGORIES } from '../faults';
import { chatCompletionBody, chatCompletionFrames } from './chat-completions';
import type { CompletionPlan } from './common';

/** What Azure's 400 says when the prompt was filtered (its own words). */
const PROMPT_FILTERED_MESSAGE =
  "The response was filtered due to the prompt triggering Azure OpenAI's content management " +
  'policy. Please modify your prompt and retry. To learn more about our content filtering ' +
  'policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766';

/**
 * The per-category verdicts (`content_filter_result`): `filtered` at `high` severity where it
 * struck, `safe` everywhere else.
 *
 * @example
 * ```ts
 * contentFilterResult('hate').hate; // => { filtered: true, severity: 'high' }
 * ```
 */
function contentFilterResult(
  filtered: ContentFilterCategory | undefined,
): Record<ContentFilterCategory, { filtered: boolean; severity: string }> {
  const out = {} as Record<ContentFilterCategory, { filtered: boolean; severity: string }>;
  for (const category of CONTENT_FILTER_CATEGORIES) {
    out[category] =
      category === filtered
        ? { filtered: true, severity: 'high' }
        : { filtered: false, severity: 'safe' };
  }
  return out;
}

/**
 * Azure's 400 for a filtered prompt, body as the service sends it: `error.code` `content_filter`
 * and the verdicts under `error.innererror.content_filter_result`.
 *
 * @example
 * ```ts
 * promptFilteredBody('violence').error.innererror.code; // => 'ResponsibleAIPolicyViolation'
 * ```
 */
export function promptFilteredBody(category: ContentFilterCategory) {
  return {
    error: {
      message: PROMPT_FILTERED_MESSAGE,
      type: null,
      param: 'prompt',
      code: 'content_filter',
      status: 400,
      innererror: {
        code: 'ResponsibleAIPolicyViolation',
        content_filter_result: contentFilterResult(category),
      },
    },
  };
}

/** A Chat Completion whose output the filter withheld: no content, `finish_reason: 'content_filter'`. */
export function filteredChatBody(
  plan: CompletionPlan,
  id: string,
  created: number,
  category: ContentFilterCategory,
): Record<string, unknown> {
  const body = chatCompletionBody(plan, id, created);
  const [choice] = body.choices as Record<string, unknown>[];
  Object.assign(choice!, {
    message: { role: 'assistant', content: null, refusal: null, annotations: [] },
    finish_reason: 'content_filter',
    content_filter_results: contentFilterResult(category),
  });
  body.prompt_filter_results = [
    { prompt_index: 0, content_filter_results: contentFilterResult(undefined) },
  ];
  return body;
}

/**
 * The frames of a streamed Chat Completion whose output the filter withheld: the role, then at
 * once the chunk that ends it with `finish_reason: 'content_filter'`.
 */
export function filteredChatFrames(plan: CompletionPlan, id: string, created: number): string[] {
  return chatCompletionFrames({ ...plan, text: '' }, id, created).map((frame) =>
    frame.replace(/"finish_reason":"(?:stop|length)"/, '"finish_reason":"content_filter"'),
  );
}

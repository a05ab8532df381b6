import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import type {
  Response,
  ResponseOutputItem,
  ResponseStreamEvent,
  ResponseUsage,
} from 'openai/resources/responses/responses';

/** What a Responses answer repeats of its request. */
type Echo = Pick<
  Response,
  'instructions' | 'parallel_tool_calls' | 'tool_choice' | 'tools' | 'max_output_tokens'
>;

function echoOf(body: Record<string, unknown>): Echo {
  return {
    instructions: typeof body['instructions'] === 'string' ? body['instructions'] : null,
    parallel_tool_calls: body['parallel_tool_calls'] !== false,
    tool_choice: (body['tool_choice'] ?? 'auto') as Response['tool_choice'],
    tools: (body['tools'] ?? []) as Response['tools'],
    max_output_tokens:
      typeof body['max_output_tokens'] === 'number' ? body['max_output_tokens'] : null,
  };
}

function usageOf(usage: CompletionUsage | undefined): ResponseUsage {
  return {
    input_tokens: usage?.prompt_tokens ?? 0,
    input_tokens_details: { cached_tokens: usage?.prompt_tokens_details?.cached_tokens ?? 0 },
    output_tokens: usage?.completion_tokens ?? 0,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage?.total_tokens ?? 0,
  };
}

/** The answer's items: its text as one output message, each tool call a `function_call` item. */
function outputOf(message: ChatCompletion.Choice['message'], id: string): ResponseOutputItem[] {
  const output: ResponseOutputItem[] = [];
  const text = message.content ?? message.refusal;
  if (text !== null && text !== '') {
    output.push({
      type: 'message',
      id: `msg_${id}`,
      role: 'assistant',
      status: 'completed',
      content:
        message.refusal !== null && message.refusal !== undefined
          ? [{ type: 'refusal', refusal: message.refusal }]
          : [{ type: 'output_text', text, annotations: [], logprobs: [] }],
    });
  }
  for (const call of message.tool_calls ?? []) {
    if (call.type !== 'function') continue;
    output.push({
      type: 'function_call',
      id: `fc_${call.id}`,
      call_id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
      status: 'completed',
    });
  }
  return output;
}

/**
 * A `ChatCompletion` (Claude's answer, already told in Chat Completions terms) as a Responses
 * `Response` to `body`: its text an output message, tool calls `function_call` items, a cut
 * answer `incomplete` with `max_output_tokens`, the usage with cached input; `model` the model
 * that answered. The answer is not stored on OpenAI: its id cannot be built on.
 *
 * @example
 * ```ts
 * chatCompletionToResponse(completion, body).output_text; // the answer's text
 * ```
 */
export function chatCompletionToResponse(
  completion: ChatCompletion,
  body: Record<string, unknown>,
): Response {
  const choice = completion.choices[0]!;
  const output = outputOf(choice.message, completion.id);
  const cut = choice.finish_reason === 'length';
  return {
    id: `resp_${completion.id}`,
    object: 'response',
    created_at: completion.created,
    model: completion.model,
    status: cut ? 'incomplete' : 'completed',
    error: null,
    incomplete_details: cut ? { reason: 'max_output_tokens' } : null,
    metadata: null,
    output,
    output_text: choice.message.content ?? '',
    temperature: null,
    top_p: null,
    usage: usageOf(completion.usage ?? undefined),
    ...echoOf(body),
  };
}

/**
 * Chat Completions chunks (Claude's stream, already told in those terms) as Responses stream
 * events, in the order OpenAI sends them: `response.created`, `response.in_progress`, the output
 * message's item and part opened, `response.output_text.delta` per piece, each tool call's item
 * with `response.function_call_arguments.delta` pieces, every item closed, and
 * `response.completed` (or `response.incomplete`) with the whole response.
 *
 * @example
 * ```ts
 * for await (const e of chunksToResponseEvents(chunks, body)) if (e.type === 'response.output_text.delta') write(e.delta);
 * ```
 */
export async function* chunksToResponseEvents(
  chunks: AsyncIterable<ChatCompletionChunk>,
  body: Record<string, unknown>,
): AsyncGenerator<ResponseStreamEvent> {
  let seq = 0;
  let snapshot: Response | undefined;
  let text = '';
  let finish: ChatCompletion.Choice['finish_reason'] = 'stop';
  let usage: CompletionUsage | undefined;
  const calls: { id: string; name: string; arguments: string }[] = [];
  let textOpen = false;
  const msgId = () => `msg_${snapshot!.id.slice('resp_'.length)}`;
  for await (const chunk of chunks) {
    if (snapshot === undefined) {
      const empty: ChatCompletion.Choice = {
        index: 0,
        message: { role: 'assistant', content: null, refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      };
      const start: ChatCompletion = {
        id: chunk.id,
        object: 'chat.completion',
        created: chunk.created,
        model: chunk.model,
        choices: [empty],
      };
      snapshot = {
        ...chatCompletionToResponse(start, body),
        status: 'in_progress',
        usage: undefined,
      };
      yield { type: 'response.created', sequence_number: seq++, response: snapshot };
      yield { type: 'response.in_progress', sequence_number: seq++, response: snapshot };
    }
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (choice === undefined) continue;
    const piece = choice.delta.content;
    if (piece !== undefined && piece !== null && piece !== '') {
      if (!textOpen) {
        textOpen = true;
        const item = {
          type: 'message',
          id: msgId(),
          role: 'assistant',
          status: 'in_progress',
          content: [],
        };
        yield {
          type: 'response.output_item.added',
          sequence_number: seq++,
          output_index: 0,
          item,
        } as ResponseStreamEvent;
        yield {
          type: 'response.content_part.added',
          sequence_number: seq++,
          item_id: msgId(),
          output_index: 0,
          content_index: 0,
          part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
        } as ResponseStreamEvent;
      }
      text += piece;
      yield {
        type: 'response.output_text.delta',
        sequence_number: seq++,
        item_id: msgId(),
        output_index: 0,
        content_index: 0,
        delta: piece,
        logprobs: [],
      };
    }
    for (const call of choice.delta.tool_calls ?? []) {
      if (call.id !== undefined) {
        calls[call.index] = { id: call.id, name: call.function?.name ?? '', arguments: '' };
        const item = {
          type: 'function_call',
          id: `fc_${call.id}`,
          call_id: call.id,
          name: calls[call.index]!.name,
          arguments: '',
          status: 'in_progress',
        };
        yield {
          type: 'response.output_item.added',
          sequence_number: seq++,
          output_index: (textOpen ? 1 : 0) + call.index,
          item,
        } as ResponseStreamEvent;
      }
      const args = call.function?.arguments;
      const open = calls[call.index];
      if (args !== undefined && args !== '' && open !== undefined) {
        open.arguments += args;
        yield {
          type: 'response.function_call_arguments.delta',
          sequence_number: seq++,
          item_id: `fc_${open.id}`,
          output_index: (textOpen ? 1 : 0) + call.index,
          delta: args,
        };
      }
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  if (snapshot === undefined) return;
  const message: ChatCompletion.Choice['message'] = {
    role: 'assistant',
    content: textOpen ? text : null,
    refusal: null,
    ...(calls.length > 0
      ? {
          tool_calls: calls.map((c) => ({
            id: c.id,
            type: 'function' as const,
            function: { name: c.name, arguments: c.arguments },
          })),
        }
      : {}),
  };
  const final = chatCompletionToResponse(
    {
      id: snapshot.id.slice('resp_'.length),
      object: 'chat.completion',
      created: snapshot.created_at,
      model: snapshot.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
      usage,
    },
    body,
  );
  for (const [i, item] of final.output.entries()) {
    if (item.type === 'message') {
      yield {
        type: 'response.output_text.done',
        sequence_number: seq++,
        item_id: item.id,
        output_index: i,
        content_index: 0,
        text,
        logprobs: [],
      };
      yield {
        type: 'response.content_part.done',
        sequence_number: seq++,
        item_id: item.id,
        output_index: i,
        content_index: 0,
        part: item.content[0]!,
      } as ResponseStreamEvent;
    } else if (item.type === 'function_call') {
      yield {
        type: 'response.function_call_arguments.done',
        sequence_number: seq++,
        item_id: item.id!,
        output_index: i,
        name: item.name,
        arguments: item.arguments,
      };
    }
    yield { type: 'response.output_item.done', sequence_number: seq++, output_index: i, item };
  }
  yield {
    type: final.status === 'incomplete' ? 'response.incomplete' : 'response.completed',
    sequence_number: seq++,
    response: final,
  } as ResponseStreamEvent;
}

/**
 * Whether an answer may be served again: a complete success (the model finished on its own, not
 * cut by `length`, a content filter, an error or a dropped stream), and whether it calls tools.
 *
 * @example
 * ```ts
 * const verdict: Verdict = { complete: true, tools: false };
 * ```
 */
export interface Verdict {
  complete: boolean;
  tools: boolean;
}

/** The APIs whose answers the cache knows how to judge, by their adapter's name. */
export const CACHED_APIS: ReadonlySet<string> = new Set([
  'chat.completions',
  'responses',
  'messages',
  'embeddings',
]);

const INCOMPLETE: Verdict = Object.freeze({ complete: false, tools: false });

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null;

/** Chat finish reasons of a complete answer, and whether each calls tools. */
const CHAT_FINISH: Readonly<Record<string, boolean>> = {
  stop: false,
  tool_calls: true,
  function_call: true,
};
/** Claude stop reasons of a complete answer, and whether each calls tools. */
const CLAUDE_STOP: Readonly<Record<string, boolean>> = {
  end_turn: false,
  stop_sequence: false,
  tool_use: true,
};
/** Responses output items that are the model's own words; any other item calls a tool. */
const PLAIN_OUTPUT = new Set(['message', 'reasoning']);

/**
 * The verdict on a whole (not streamed) answer of `api`.
 *
 * @example
 * ```ts
 * answerVerdict('chat.completions', completion); // { complete: true, tools: false }
 * ```
 */
export function answerVerdict(api: string, data: unknown): Verdict {
  if (!isObject(data)) return INCOMPLETE;
  switch (api) {
    case 'chat.completions':
      return chatVerdict(data);
    case 'responses':
      return responseVerdict(data);
    case 'messages':
      return messageVerdict(data);
    case 'embeddings':
      return Array.isArray(data.data) ? { complete: true, tools: false } : INCOMPLETE;
    default:
      return INCOMPLETE;
  }
}

function chatVerdict(data: Json): Verdict {
  const choices = data.choices;
  if (!Array.isArray(choices) || choices.length === 0) return INCOMPLETE;
  let tools = false;
  for (const choice of choices) {
    if (!isObject(choice)) return INCOMPLETE;
    const reason = choice.finish_reason;
    if (typeof reason !== 'string' || !Object.hasOwn(CHAT_FINISH, reason)) return INCOMPLETE;
    const calls = isObject(choice.message) ? choice.message.tool_calls : undefined;
    tools ||= CHAT_FINISH[reason]! || (Array.isArray(calls) && calls.length > 0);
  }
  return { complete: true, tools };
}

function responseVerdict(data: Json): Verdict {
  if (data.status !== 'completed' || !Array.isArray(data.output)) return INCOMPLETE;
  const tools = data.output.some(
    (item) => !isObject(item) || !PLAIN_OUTPUT.has(item.type as string),
  );
  return { complete: true, tools };
}

function messageVerdict(data: Json): Verdict {
  const reason = data.stop_reason;
  if (typeof reason !== 'string' || !Object.hasOwn(CLAUDE_STOP, reason)) return INCOMPLETE;
  const content = Array.isArray(data.content) ? data.content : [];
  const tools = CLAUDE_STOP[reason]! || content.some(isToolBlock);
  return { complete: true, tools };
}

function isToolBlock(block: unknown): boolean {
  return isObject(block) && typeof block.type === 'string' && block.type.endsWith('tool_use');
}

/**
 * The verdict on a stream of `api`, built event by event as it is read: complete only once the
 * events that close the answer came (every chat choice finished, `response.completed`, Claude's
 * `message_stop` after an ending stop reason).
 *
 * @example
 * ```ts
 * const judge = new StreamVerdict('messages');
 * for (const event of events) judge.see(event);
 * judge.verdict(); // { complete: true, tools: false }
 * ```
 */
export class StreamVerdict {
  private tools = false;
  private failed = false;
  /** Chat: choices seen, and those finished; others: whether the closing event came. */
  private readonly open = new Set<number>();
  private finished = 0;
  private closed = false;

  constructor(private readonly api: string) {}

  see(event: unknown): void {
    if (!isObject(event) || this.failed) return;
    switch (this.api) {
      case 'chat.completions':
        return this.chat(event);
      case 'responses':
        return this.response(event);
      case 'messages':
        return this.message(event);
      default:
        this.failed = true;
    }
  }

  verdict(): Verdict {
    if (this.failed || !this.closed) return INCOMPLETE;
    if (this.api === 'chat.completions' && (this.finished === 0 || this.open.size > 0)) {
      return INCOMPLETE;
    }
    return { complete: true, tools: this.tools };
  }

  private chat(event: Json): void {
    if (isObject(event.error)) this.failed = true;
    if (!Array.isArray(event.choices)) return;
    this.closed = true;
    for (const choice of event.choices) {
      if (!isObject(choice)) continue;
      const index = typeof choice.index === 'number' ? choice.index : 0;
      const delta = isObject(choice.delta) ? choice.delta : undefined;
      if (delta !== undefined && (delta.tool_calls != null || delta.function_call != null)) {
        this.tools = true;
      }
      const reason = choice.finish_reason;
      if (reason == null) {
        this.open.add(index);
        continue;
      }
      if (typeof reason !== 'string' || !Object.hasOwn(CHAT_FINISH, reason)) this.failed = true;
      else {
        this.tools ||= CHAT_FINISH[reason]!;
        this.open.delete(index);
        this.finished++;
      }
    }
  }

  private response(event: Json): void {
    const type = event.type;
    if (type === 'response.completed') {
      const verdict = isObject(event.response) ? responseVerdict(event.response) : INCOMPLETE;
      if (!verdict.complete) this.failed = true;
      this.tools ||= verdict.tools;
      this.closed = true;
    } else if (type === 'response.failed' || type === 'response.incomplete' || type === 'error') {
      this.failed = true;
    }
  }

  private message(event: Json): void {
    const type = event.type;
    if (type === 'content_block_start' && isToolBlock(event.content_block)) this.tools = true;
    else if (type === 'message_delta' && isObject(event.delta)) {
      const reason = event.delta.stop_reason;
      if (reason == null) return;
      if (typeof reason !== 'string' || !Object.hasOwn(CLAUDE_STOP, reason)) this.failed = true;
      else this.tools ||= CLAUDE_STOP[reason]!;
      this.stopReason = true;
    } else if (type === 'message_stop') this.closed = this.stopReason;
    else if (type === 'error') this.failed = true;
  }

  private stopReason = false;
}

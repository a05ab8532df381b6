import type {
  ContentBlockParam,
  ImageBlockParam,
  MessageCreateParamsBase,
  MessageParam,
  TextBlockParam,
  Tool,
  ToolChoice,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import type {
  ChatCompletionCreateParamsBase,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { isObject, isSet, refuse, translating, type Translated } from './refusal';

/** Where a translated call goes: the target model, and the `max_tokens` to set if the caller set none. */
interface TranslationTarget {
  readonly model: string;
  /** Claude needs a cap: the target's documented maximum output, or `outputReservation`. */
  readonly maxTokens: number;
}

/** Fields that, once set, cannot be said in a Messages request: field -> why. */
const CHAT_ONLY: Readonly<Record<string, string>> = {
  logprobs: 'Claude returns no log probabilities',
  top_logprobs: 'Claude returns no log probabilities',
  audio: 'Claude has no audio output',
  logit_bias: 'Messages has no logit bias',
  frequency_penalty: 'Messages has no frequency penalty',
  presence_penalty: 'Messages has no presence penalty',
  seed: 'Messages has no seed',
  prediction: 'Messages has no predicted output',
  web_search_options: "a hosted tool: Claude's web search is another tool with other results",
  functions: 'the deprecated functions: use tools',
  function_call: 'the deprecated function_call: use tool_choice',
  reasoning_effort: "Claude's thinking budget is not the same setting",
  verbosity: 'Messages has no verbosity',
  metadata: 'stored-completion metadata has no place in Messages',
  data_sources: "Azure's On Your Data has no place in Messages",
  // The Anthropic SDK has no sampling settings any more, and generation-5 Claude models refuse
  // them ("temperature is deprecated for this model"): sending or dropping one would both guess.
  temperature: 'Claude generation-5 models take no temperature',
  top_p: 'Claude generation-5 models take no top_p',
};

/**
 * A Chat Completions request as a Messages request for `target`, or the field that stops it:
 * system and developer messages become `system`; tool calls and tool results become `tool_use`
 * and `tool_result` blocks; images (URL and base64) image blocks; `stop` `stop_sequences`;
 * `response_format` `json_schema` `output_config.format`; `max_tokens` is set from the caller's
 * cap or `target.maxTokens`.
 *
 * @example
 * ```ts
 * const out = chatToMessages({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hi' }] },
 *   { model: 'claude-sonnet-5', maxTokens: 4096 });
 * // { body: { model: 'claude-sonnet-5', max_tokens: 4096, messages: [{ role: 'user', content: 'Hi' }] } }
 * ```
 */
export function chatToMessages(
  body: Record<string, unknown>,
  target: TranslationTarget,
): Translated<MessageCreateParamsBase> {
  return translating(() => translate(body as unknown as ChatCompletionCreateParamsBase, target));
}

function translate(
  body: ChatCompletionCreateParamsBase,
  target: TranslationTarget,
): MessageCreateParamsBase {
  for (const [field, why] of Object.entries(CHAT_ONLY)) {
    const value = (body as unknown as Record<string, unknown>)[field];
    if (isSet(value) && value !== false && !(field === 'logprobs' && value === false)) {
      refuse(field, why);
    }
  }
  if (isSet(body.n) && body.n !== 1) refuse('n', 'Claude answers one choice per call');
  if (body.modalities?.includes('audio')) refuse('modalities', 'Claude has no audio output');
  if (body.store === true) refuse('store', 'Messages stores no completions');
  if (isSet(body.service_tier) && body.service_tier !== 'auto' && body.service_tier !== 'default') {
    refuse('service_tier', "Claude's service tiers are not OpenAI's");
  }
  const { system, messages } = conversation(body.messages);
  const out: MessageCreateParamsBase = {
    model: target.model,
    max_tokens: body.max_completion_tokens ?? body.max_tokens ?? target.maxTokens,
    messages,
  };
  if (system.length > 0) out.system = system;
  if (isSet(body.stop)) {
    out.stop_sequences = typeof body.stop === 'string' ? [body.stop] : body.stop!;
  }
  if (body.stream === true) out.stream = true;
  if (body.tools !== undefined && body.tools.length > 0) out.tools = body.tools.map(toolOf);
  const choice = toolChoiceOf(body);
  if (choice !== undefined) out.tool_choice = choice;
  const format = body.response_format;
  if (format?.type === 'json_schema') {
    out.output_config = {
      format: { type: 'json_schema', schema: format.json_schema.schema ?? {} },
    };
  } else if (format?.type === 'json_object') {
    refuse('response_format', 'Messages takes a JSON schema, not "any JSON object"');
  }
  const user = body.safety_identifier ?? body.user;
  if (user !== undefined) out.metadata = { user_id: user };
  return out;
}

type ChatMessage = ChatCompletionCreateParamsBase['messages'][number];

/** The system prompt (leading system/developer messages) and the turns, tool results merged. */
function conversation(list: readonly ChatMessage[]): {
  system: TextBlockParam[];
  messages: MessageParam[];
} {
  const system: TextBlockParam[] = [];
  const messages: MessageParam[] = [];
  // Tool results and the user's next words go to Claude in one user turn, results first.
  const push = (role: 'user' | 'assistant', blocks: ContentBlockParam[]): void => {
    const last = messages[messages.length - 1];
    if (last !== undefined && last.role === role && role === 'user') {
      (last.content as ContentBlockParam[]).push(...blocks);
    } else messages.push({ role, content: blocks });
  };
  list.forEach((m, i) => {
    const at = `messages[${i}]`;
    if ('name' in m && isSet(m.name)) refuse(`${at}.name`, 'Messages has no participant names');
    switch (m.role) {
      case 'system':
      case 'developer':
        if (messages.length > 0) {
          refuse(`${at}.role`, 'Claude takes its system prompt before the conversation only');
        }
        system.push(...textBlocks(m.content, at));
        return;
      case 'user':
        push('user', userBlocks(m.content, at));
        return;
      case 'assistant': {
        if (isSet(m.audio)) refuse(`${at}.audio`, 'Claude has no audio');
        if (isSet(m.function_call)) refuse(`${at}.function_call`, 'the deprecated function_call');
        const blocks: ContentBlockParam[] = isSet(m.content) ? textBlocks(m.content!, at) : [];
        if (isSet(m.refusal) && m.refusal !== '') blocks.push({ type: 'text', text: m.refusal! });
        m.tool_calls?.forEach((call, j) => {
          if (call.type !== 'function') {
            refuse(`${at}.tool_calls[${j}].type`, 'Claude calls function tools only');
          }
          blocks.push({
            type: 'tool_use',
            id: call.id,
            name: call.function.name,
            input: argumentsOf(
              call.function.arguments,
              `${at}.tool_calls[${j}].function.arguments`,
            ),
          });
        });
        messages.push({ role: 'assistant', content: blocks });
        return;
      }
      case 'tool': {
        const result: ToolResultBlockParam = {
          type: 'tool_result',
          tool_use_id: m.tool_call_id,
          content: typeof m.content === 'string' ? m.content : textBlocks(m.content, at),
        };
        push('user', [result]);
        return;
      }
      default:
        refuse(`${at}.role`, 'the deprecated function role: use tool');
    }
  });
  // A lone string stays a string, as a caller of the Messages API would write it.
  for (const m of messages) {
    const blocks = m.content as ContentBlockParam[];
    if (blocks.length === 1 && blocks[0]!.type === 'text' && !('cache_control' in blocks[0]!)) {
      m.content = blocks[0]!.text;
    }
  }
  return { system, messages };
}

function argumentsOf(text: string, at: string): Record<string, unknown> {
  let input: unknown;
  try {
    input = JSON.parse(text === '' ? '{}' : text);
  } catch {
    refuse(at, 'not valid JSON: Claude takes a tool input as an object');
  }
  if (!isObject(input)) refuse(at, 'Claude takes a tool input as a JSON object');
  return input;
}

function textBlocks(content: string | readonly { type: string }[], at: string): TextBlockParam[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return content.map((part, j) => {
    const p = part as { type: string; text?: string; refusal?: string };
    if (p.type === 'text') return { type: 'text', text: p.text ?? '' };
    if (p.type === 'refusal') return { type: 'text', text: p.refusal ?? '' };
    return refuse(`${at}.content[${j}].type`, `a '${p.type}' part cannot stand in this message`);
  });
}

function userBlocks(
  content: string | readonly { type: string }[],
  at: string,
): ContentBlockParam[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return content.map((part, j): ContentBlockParam => {
    const p = part as Record<string, unknown> & { type: string };
    if (p.type === 'text') return { type: 'text', text: String(p['text']) };
    if (p.type === 'image_url') return imageOf(p['image_url'], `${at}.content[${j}].image_url`);
    if (p.type === 'input_audio')
      refuse(`${at}.content[${j}].input_audio`, 'Claude takes no audio');
    if (p.type === 'file') {
      refuse(`${at}.content[${j}].file`, "a file id lives in OpenAI's storage, not Claude's");
    }
    return refuse(`${at}.content[${j}].type`, `Messages has no '${p.type}' part`);
  });
}

const MEDIA = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

function imageOf(image: unknown, at: string): ImageBlockParam {
  const url = isObject(image) ? String(image['url']) : '';
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data !== null) {
    if (!MEDIA.has(data[1]!)) refuse(`${at}.url`, `Claude takes no ${data[1]} images`);
    const media_type = data[1] as 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp';
    return { type: 'image', source: { type: 'base64', media_type, data: data[2]! } };
  }
  if (!/^https?:\/\//.test(url))
    refuse(`${at}.url`, 'Claude takes an image by https URL or base64');
  return { type: 'image', source: { type: 'url', url } };
}

function toolOf(tool: ChatCompletionTool, i: number): Tool {
  if (tool.type !== 'function') refuse(`tools[${i}].type`, 'Claude takes function tools only');
  const fn = tool.function;
  const out: Tool = {
    name: fn.name,
    input_schema: (fn.parameters ?? { type: 'object', properties: {} }) as Tool.InputSchema,
  };
  if (fn.description !== undefined) out.description = fn.description;
  if (isSet(fn.strict)) out.strict = fn.strict!;
  return out;
}

function toolChoiceOf(body: ChatCompletionCreateParamsBase): ToolChoice | undefined {
  const choice = body.tool_choice;
  const single = body.parallel_tool_calls === false ? { disable_parallel_tool_use: true } : {};
  if (choice === undefined)
    return body.parallel_tool_calls === false ? { type: 'auto', ...single } : undefined;
  if (choice === 'auto') return { type: 'auto', ...single };
  if (choice === 'none') return { type: 'none' };
  if (choice === 'required') return { type: 'any', ...single };
  if (choice.type === 'function') return { type: 'tool', name: choice.function.name, ...single };
  return refuse('tool_choice', `Messages has no '${choice.type}' tool choice`);
}

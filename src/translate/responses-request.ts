import type {
  ChatCompletionContentPart,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { isObject, isSet, refuse } from './refusal';

/** Responses fields that, once set, have no Messages equivalent: field -> why. */
const RESPONSES_ONLY: Readonly<Record<string, string>> = {
  previous_response_id: 'the conversation so far is stored on OpenAI, where Claude cannot read it',
  conversation: 'the conversation is stored on OpenAI, where Claude cannot read it',
  background: 'a background response runs on OpenAI',
  prompt: 'a stored prompt lives on OpenAI',
  reasoning: "OpenAI's reasoning settings are not Claude's thinking",
  include: 'encrypted reasoning and hosted-tool outputs are OpenAI-side',
  context_management: "OpenAI's context management runs on OpenAI",
  metadata: 'stored-response metadata has no place in Messages',
  temperature: 'Claude generation-5 models take no temperature',
  top_p: 'Claude generation-5 models take no top_p',
  truncation: 'Messages does not truncate a conversation for you',
};

type ChatMessage = ChatCompletionMessageParam;

/**
 * A Responses request (text and function tools) as the Chat Completions request it means, on the
 * way to Messages (see {@link chatToMessages}); throws a refusal (see `refusal.ts`) at the first
 * field that cannot be said there: a stored conversation (`previous_response_id`), hosted tools,
 * encrypted reasoning, file ids, audio.
 *
 * @example
 * ```ts
 * responsesToChatBody({ model: 'gpt-4o', instructions: 'Be brief', input: 'Hi' });
 * // { model: 'gpt-4o', messages: [{ role: 'system', content: 'Be brief' }, { role: 'user', content: 'Hi' }] }
 * ```
 */
export function responsesToChatBody(body: Record<string, unknown>): ChatCompletionCreateParamsBase {
  for (const [field, why] of Object.entries(RESPONSES_ONLY)) {
    if (isSet(body[field]) && !(Array.isArray(body[field]) && body[field].length === 0)) {
      refuse(field, why);
    }
  }
  if (body['store'] === true) refuse('store', 'a Claude answer is not stored on OpenAI for later');
  const text = body['text'];
  if (isObject(text) && isSet(text['verbosity']))
    refuse('text.verbosity', 'Messages has no verbosity');
  const messages: ChatMessage[] = [];
  if (typeof body['instructions'] === 'string') {
    messages.push({ role: 'system', content: body['instructions'] });
  }
  const input = body['input'];
  if (typeof input === 'string') messages.push({ role: 'user', content: input });
  else if (Array.isArray(input)) input.forEach((item, i) => itemOf(item, `input[${i}]`, messages));
  const out: ChatCompletionCreateParamsBase = { model: String(body['model']), messages };
  if (typeof body['max_output_tokens'] === 'number') {
    out.max_completion_tokens = body['max_output_tokens'];
  }
  if (body['stream'] === true) out.stream = true;
  if (Array.isArray(body['tools']) && body['tools'].length > 0) {
    out.tools = body['tools'].map((t, i) => toolOf(t, i));
  }
  const choice = body['tool_choice'];
  if (typeof choice === 'string') out.tool_choice = choice as 'auto' | 'none' | 'required';
  else if (isObject(choice)) {
    if (choice['type'] !== 'function') refuse('tool_choice', 'Claude calls function tools only');
    out.tool_choice = { type: 'function', function: { name: String(choice['name']) } };
  }
  if (body['parallel_tool_calls'] === false) out.parallel_tool_calls = false;
  const format = isObject(text) ? text['format'] : undefined;
  if (isObject(format) && format['type'] === 'json_schema') {
    out.response_format = {
      type: 'json_schema',
      json_schema: { name: String(format['name'] ?? 'output'), schema: format['schema'] as never },
    };
  } else if (isObject(format) && format['type'] === 'json_object') {
    refuse('text.format', 'Messages takes a JSON schema, not "any JSON object"');
  }
  const user = body['safety_identifier'] ?? body['user'];
  if (typeof user === 'string') out.safety_identifier = user;
  return out;
}

function itemOf(item: unknown, at: string, messages: ChatMessage[]): void {
  if (!isObject(item)) return refuse(at, 'an input item must be an object');
  const type = item['type'] ?? 'message';
  if (type === 'message') {
    const role = item['role'];
    const content = item['content'];
    if (role === 'assistant') {
      messages.push({ role: 'assistant', content: textOf(content, at) });
      return;
    }
    if (role === 'system' || role === 'developer') {
      messages.push({ role: 'system', content: textOf(content, at) });
      return;
    }
    messages.push({ role: 'user', content: partsOf(content, at) });
    return;
  }
  if (type === 'function_call') {
    const call: ChatCompletionMessageFunctionToolCall = {
      id: String(item['call_id']),
      type: 'function',
      function: { name: String(item['name']), arguments: String(item['arguments'] ?? '') },
    };
    const last = messages[messages.length - 1];
    // Parallel calls of one turn are one assistant message.
    if (last?.role === 'assistant' && last.tool_calls !== undefined) last.tool_calls.push(call);
    else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    return;
  }
  if (type === 'function_call_output') {
    const output = item['output'];
    if (typeof output !== 'string')
      refuse(`${at}.output`, 'a tool result of Claude takes text here');
    messages.push({ role: 'tool', tool_call_id: String(item['call_id']), content: output });
    return;
  }
  if (type === 'reasoning')
    refuse(`${at}.type`, "OpenAI's (encrypted) reasoning cannot go to Claude");
  refuse(`${at}.type`, `a '${String(type)}' item is OpenAI's own (a hosted tool or stored item)`);
}

function textOf(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part, j) => {
      const p = isObject(part) ? part : {};
      if (p['type'] === 'input_text' || p['type'] === 'output_text') return String(p['text']);
      if (p['type'] === 'refusal') return String(p['refusal']);
      return refuse(`${at}.content[${j}].type`, `a '${String(p['type'])}' part cannot stand here`);
    })
    .join('');
}

function partsOf(content: unknown, at: string): string | ChatCompletionContentPart[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part, j): ChatCompletionContentPart => {
    const p = isObject(part) ? part : {};
    const where = `${at}.content[${j}]`;
    if (p['type'] === 'input_text') return { type: 'text', text: String(p['text']) };
    if (p['type'] === 'input_image') {
      if (isSet(p['file_id'])) refuse(`${where}.file_id`, "a file id lives in OpenAI's storage");
      return { type: 'image_url', image_url: { url: String(p['image_url']) } };
    }
    if (p['type'] === 'input_file') refuse(`${where}.type`, "a file lives in OpenAI's storage");
    if (p['type'] === 'input_audio') refuse(`${where}.type`, 'Claude takes no audio');
    return refuse(`${where}.type`, `Messages has no '${String(p['type'])}' part`);
  });
}

function toolOf(tool: unknown, i: number): ChatCompletionTool {
  const t = isObject(tool) ? tool : {};
  if (t['type'] !== 'function') {
    refuse(`tools[${i}]`, `'${String(t['type'])}' is a hosted tool: Claude's are other services`);
  }
  const fn: ChatCompletionTool & { type: 'function' } = {
    type: 'function',
    function: {
      name: String(t['name']),
      parameters: (t['parameters'] ?? { type: 'object', properties: {} }) as Record<
        string,
        unknown
      >,
    },
  };
  if (typeof t['description'] === 'string') fn.function.description = t['description'];
  if (typeof t['strict'] === 'boolean') fn.function.strict = t['strict'];
  return fn;
}

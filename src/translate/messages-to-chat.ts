import type {
  ContentBlockParam,
  MessageCreateParamsBase,
  MessageParam,
  Tool,
} from '@anthropic-ai/sdk/resources/messages';
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionContentPart,
  ChatCompletionContentPartText,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import { isObject, isSet, refuse, translating, type Translated } from './refusal';

/** Fields of a Messages request that, once set, cannot be said in Chat Completions. */
const MESSAGES_ONLY: Readonly<Record<string, string>> = {
  thinking: 'extended thinking (and its signed, encrypted blocks) has no place in Chat Completions',
  container: 'a container lives on Anthropic',
  mcp_servers: "Claude's MCP connector is a server tool",
  context_management: "Claude's context management runs on Anthropic",
  cache_control: 'the cache breakpoint would be lost: OpenAI caches prefixes by itself',
  inference_geo: "Claude's inference geography is not an OpenAI setting",
  top_k: 'Chat Completions has no top_k',
  output_format: 'the beta output_format: use output_config.format',
  diagnostics: "Claude's diagnostics are Anthropic's",
  user_profile_id: 'an Anthropic user profile',
  workspace_id: 'an Anthropic workspace',
};

/**
 * A Messages request as a Chat Completions request for `model`, or the field that stops it: the
 * inverse of {@link chatToMessages} (`system` becomes a system message, `tool_use` /
 * `tool_result` blocks tool calls and tool messages, `stop_sequences` `stop`, `max_tokens`
 * `max_completion_tokens`, `output_config.format` a `json_schema` response format).
 *
 * @example
 * ```ts
 * const out = messagesToChat({ model: 'claude-sonnet-5', max_tokens: 64, system: 'Be brief',
 *   messages: [{ role: 'user', content: 'Hi' }] }, 'gpt-4o');
 * // { body: { model: 'gpt-4o', max_completion_tokens: 64, messages: [{ role: 'system', ... }, ...] } }
 * ```
 */
export function messagesToChat(
  body: Record<string, unknown>,
  model: string,
): Translated<ChatCompletionCreateParamsBase> {
  return translating(() => translate(body as unknown as MessageCreateParamsBase, model));
}

function translate(body: MessageCreateParamsBase, model: string): ChatCompletionCreateParamsBase {
  const raw = body as unknown as Record<string, unknown>;
  for (const [field, why] of Object.entries(MESSAGES_ONLY)) {
    if (isSet(raw[field])) refuse(field, why);
  }
  if (isSet(body.speed) && body.speed !== 'standard') refuse('speed', "Claude's fast mode");
  if (isSet(body.output_config?.effort)) refuse('output_config.effort', "Claude's effort");
  const messages: ChatCompletionMessageParam[] = [];
  const system = body.system;
  if (typeof system === 'string') messages.push({ role: 'system', content: system });
  else if (system !== undefined && system.length > 0) {
    system.forEach((b, i) => {
      if (isSet(b.cache_control)) refuse(`system[${i}].cache_control`, CACHE_LOST);
      if (isSet(b.citations)) refuse(`system[${i}].citations`, 'Chat Completions has no citations');
    });
    messages.push({ role: 'system', content: system.map((b) => ({ type: 'text', text: b.text })) });
  }
  body.messages.forEach((m, i) => messages.push(...turn(m, `messages[${i}]`)));
  const out: ChatCompletionCreateParamsBase = {
    model,
    messages,
    max_completion_tokens: body.max_tokens,
  };
  if (body.stop_sequences !== undefined && body.stop_sequences.length > 0) {
    if (body.stop_sequences.length > 4) refuse('stop_sequences', 'OpenAI takes at most 4 stops');
    out.stop = body.stop_sequences;
  }
  if (typeof raw['temperature'] === 'number') out.temperature = raw['temperature'];
  if (typeof raw['top_p'] === 'number') out.top_p = raw['top_p'];
  if (body.stream === true) out.stream = true;
  if (body.tools !== undefined && body.tools.length > 0) {
    out.tools = body.tools.map((t, i) => toolOf(t as Tool, i));
  }
  const choice = body.tool_choice;
  if (choice !== undefined) {
    out.tool_choice = toolChoiceOf(choice);
    if ('disable_parallel_tool_use' in choice && choice.disable_parallel_tool_use === true) {
      out.parallel_tool_calls = false;
    }
  }
  const format = body.output_config?.format;
  if (isSet(format)) {
    out.response_format = {
      type: 'json_schema',
      json_schema: { name: 'output', schema: format!.schema, strict: true },
    };
  }
  if (isSet(body.metadata?.user_id)) out.safety_identifier = body.metadata!.user_id!;
  return out;
}

const CACHE_LOST = 'the cache breakpoint would be lost: OpenAI caches prefixes by itself';

/** One Messages turn as Chat Completions messages: tool results become tool messages, first. */
function turn(m: MessageParam, at: string): ChatCompletionMessageParam[] {
  const blocks: ContentBlockParam[] =
    typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
  blocks.forEach((b, j) => {
    if ('cache_control' in b && isSet(b.cache_control)) {
      refuse(`${at}.content[${j}].cache_control`, CACHE_LOST);
    }
  });
  if (m.role === 'assistant') return [assistantOf(blocks, at)];
  const out: ChatCompletionMessageParam[] = [];
  const parts: ChatCompletionContentPart[] = [];
  blocks.forEach((b, j) => {
    const where = `${at}.content[${j}]`;
    switch (b.type) {
      case 'text':
        if (isSet(b.citations)) refuse(`${where}.citations`, 'Chat Completions has no citations');
        parts.push({ type: 'text', text: b.text });
        return;
      case 'image':
        parts.push(imageOf(b.source, where));
        return;
      case 'tool_result': {
        if (b.is_error === true) refuse(`${where}.is_error`, 'a tool message has no error flag');
        const content =
          b.content === undefined
            ? ''
            : typeof b.content === 'string'
              ? b.content
              : b.content.map((c, k): ChatCompletionContentPartText => {
                  if (c.type !== 'text') {
                    refuse(
                      `${where}.content[${k}].type`,
                      `a tool message takes text, not '${c.type}'`,
                    );
                  }
                  return { type: 'text', text: c.text };
                });
        out.push({ role: 'tool', tool_call_id: b.tool_use_id, content });
        return;
      }
      default:
        unsupported(b.type, where);
    }
  });
  if (parts.length > 0) {
    const only = parts.length === 1 && parts[0]!.type === 'text' ? parts[0]!.text : undefined;
    out.push({
      role: 'user',
      content: typeof m.content === 'string' ? m.content : (only ?? parts),
    });
  }
  return out;
}

function assistantOf(blocks: ContentBlockParam[], at: string): ChatCompletionAssistantMessageParam {
  const text: string[] = [];
  const calls: NonNullable<ChatCompletionAssistantMessageParam['tool_calls']> = [];
  blocks.forEach((b, j) => {
    const where = `${at}.content[${j}]`;
    if (b.type === 'text') text.push(b.text);
    else if (b.type === 'tool_use') {
      calls.push({
        id: b.id,
        type: 'function',
        function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) },
      });
    } else unsupported(b.type, where);
  });
  const out: ChatCompletionAssistantMessageParam = {
    role: 'assistant',
    content: text.length > 0 ? text.join('') : null,
  };
  if (calls.length > 0) out.tool_calls = calls;
  return out;
}

function unsupported(type: string, at: string): never {
  if (type === 'thinking' || type === 'redacted_thinking') {
    refuse(
      `${at}.type`,
      "Claude's signed (or encrypted) reasoning cannot be sent to another model",
    );
  }
  if (type === 'document') refuse(`${at}.type`, 'Chat Completions takes no documents inline');
  return refuse(`${at}.type`, `a '${type}' block is Claude's own (a server tool or its result)`);
}

function imageOf(source: unknown, at: string): ChatCompletionContentPart {
  if (!isObject(source)) return refuse(`${at}.source`, 'an image needs a source');
  if (source['type'] === 'base64') {
    const url = `data:${String(source['media_type'])};base64,${String(source['data'])}`;
    return { type: 'image_url', image_url: { url } };
  }
  if (source['type'] === 'url')
    return { type: 'image_url', image_url: { url: String(source['url']) } };
  return refuse(`${at}.source.file_id`, "a file id lives in Anthropic's storage, not OpenAI's");
}

function toolOf(tool: Tool, i: number): ChatCompletionTool {
  if (tool.type !== undefined && tool.type !== null && tool.type !== 'custom') {
    refuse(`tools[${i}]`, `'${tool.type}' is one of Claude's server tools`);
  }
  if (isSet(tool.cache_control)) refuse(`tools[${i}].cache_control`, CACHE_LOST);
  if (tool.input_examples !== undefined)
    refuse(`tools[${i}].input_examples`, 'Chat Completions has no tool examples');
  const fn: ChatCompletionTool & { type: 'function' } = {
    type: 'function',
    function: { name: tool.name, parameters: tool.input_schema as Record<string, unknown> },
  };
  if (tool.description !== undefined) fn.function.description = tool.description;
  if (tool.strict !== undefined) fn.function.strict = tool.strict;
  return fn;
}

function toolChoiceOf(
  choice: NonNullable<MessageCreateParamsBase['tool_choice']>,
): ChatCompletionToolChoiceOption {
  switch (choice.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    default:
      return { type: 'function', function: { name: choice.name } };
  }
}

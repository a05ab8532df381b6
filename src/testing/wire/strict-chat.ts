/**
 * What OpenAI's Chat Completions API refuses with a 400 before it generates anything, as its API
 * reference and its error answers word it: unknown top-level arguments (such as Anthropic's
 * `stop_sequences` or `system`), unknown roles and content part types, `tool` messages that answer
 * no `tool_calls`, and `tool_calls` left without their `tool` answers.
 */
import { isRecord, type InvalidRequest } from './common';

/** The top-level arguments of `POST /chat/completions` (the API reference's request body). */
const CHAT_ARGUMENTS = new Set([
  'messages',
  'model',
  'audio',
  'frequency_penalty',
  'function_call',
  'functions',
  'logit_bias',
  'logprobs',
  'max_completion_tokens',
  'max_tokens',
  'metadata',
  'modalities',
  'n',
  'parallel_tool_calls',
  'prediction',
  'presence_penalty',
  'prompt_cache_key',
  'prompt_cache_retention',
  'reasoning_effort',
  'response_format',
  'safety_identifier',
  'seed',
  'service_tier',
  'stop',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'user',
  'verbosity',
  'web_search_options',
  // Azure OpenAI's extension (On Your Data).
  'data_sources',
]);

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);
const PART_TYPES = new Set(['text', 'image_url', 'input_audio', 'refusal', 'audio', 'file']);

const invalid = (message: string, param: string, code = 'invalid_value'): InvalidRequest => ({
  message,
  param,
  code,
});

/**
 * The 400 the real API gives `body`, if it would refuse it (`undefined`: accepted). Expects a
 * body whose `model` and `messages` were already checked.
 *
 * @example
 * ```ts
 * refuseChatBody({ model: 'gpt-4o', messages: [], stop_sequences: ['x'] })?.message;
 * // => 'Unrecognized request argument supplied: stop_sequences'
 * ```
 */
export function refuseChatBody(body: Record<string, unknown>): InvalidRequest | undefined {
  for (const key of Object.keys(body)) {
    if (!CHAT_ARGUMENTS.has(key)) {
      return { message: `Unrecognized request argument supplied: ${key}` };
    }
  }
  const messages = body['messages'] as unknown[];
  let open: Set<string> | undefined;
  let openAt = 0;
  for (const [i, m] of messages.entries()) {
    const message = m as Record<string, unknown>;
    const role = message['role'] as string;
    if (!ROLES.has(role)) {
      return invalid(
        `Invalid value: '${role}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        `messages[${i}].role`,
      );
    }
    if (open !== undefined && role !== 'tool') return unanswered(open, openAt);
    if (role === 'tool') {
      const id = message['tool_call_id'];
      if (open === undefined || typeof id !== 'string' || !open.has(id)) {
        return invalid(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${i}].role`,
          'invalid_parameter',
        );
      }
      open.delete(id);
      if (open.size === 0) open = undefined;
    }
    const part = badPart(message['content'], i);
    if (part !== undefined) return part;
    const calls = message['tool_calls'];
    if (role === 'assistant' && Array.isArray(calls) && calls.length > 0) {
      open = new Set(calls.map((c) => (isRecord(c) ? String(c['id']) : '')));
      openAt = i;
    }
  }
  if (open !== undefined) return unanswered(open, openAt);
  return badTools(body['tools']);
}

function unanswered(open: Set<string>, at: number): InvalidRequest {
  return invalid(
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each " +
      `'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(', ')}`,
    `messages.[${at}].role`,
    'invalid_parameter',
  );
}

function badPart(content: unknown, i: number): InvalidRequest | undefined {
  if (!Array.isArray(content)) return undefined;
  for (const [j, part] of content.entries()) {
    const type = isRecord(part) ? part['type'] : undefined;
    if (typeof type !== 'string' || !PART_TYPES.has(type)) {
      return invalid(
        `Invalid value: '${String(type)}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'.`,
        `messages[${i}].content[${j}].type`,
      );
    }
    if (type === 'image_url') {
      const image = (part as Record<string, unknown>)['image_url'];
      if (!isRecord(image) || typeof image['url'] !== 'string') {
        return invalid(
          `Missing required parameter: 'messages[${i}].content[${j}].image_url.url'.`,
          `messages[${i}].content[${j}].image_url.url`,
          'missing_required_parameter',
        );
      }
    }
  }
  return undefined;
}

function badTools(tools: unknown): InvalidRequest | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) {
    return invalid("Invalid type for 'tools': expected an array.", 'tools', 'invalid_type');
  }
  for (const [i, tool] of tools.entries()) {
    if (!isRecord(tool) || (tool['type'] !== 'function' && tool['type'] !== 'custom')) {
      return invalid(
        `Invalid value: '${String(isRecord(tool) ? tool['type'] : tool)}'. Supported values are: 'function' and 'custom'.`,
        `tools[${i}].type`,
      );
    }
    const fn = tool['function'];
    if (tool['type'] === 'function' && (!isRecord(fn) || typeof fn['name'] !== 'string')) {
      return invalid(
        `Missing required parameter: 'tools[${i}].function.name'.`,
        `tools[${i}].function.name`,
        'missing_required_parameter',
      );
    }
  }
  return undefined;
}

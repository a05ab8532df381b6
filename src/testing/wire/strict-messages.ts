/**
 * What Anthropic's Messages API (and Azure AI Foundry's, under `/anthropic/`) refuses with a 400
 * `invalid_request_error` before it generates anything, as its API reference and its error
 * answers word it: extra top-level fields (OpenAI's `n`, `response_format`, `logprobs`...), roles
 * other than `user` and `assistant` (a `system` role message), unknown content block types,
 * `tool_use` blocks without their `tool_result` right after, and malformed tools.
 */
import { isRecord, type InvalidRequest } from './common';

/** The top-level fields of `POST /v1/messages` (the API reference's request body). */
const MESSAGES_FIELDS = new Set([
  'model',
  'messages',
  'max_tokens',
  'cache_control',
  'container',
  'context_management',
  'diagnostics',
  'inference_geo',
  'mcp_servers',
  'metadata',
  'output_config',
  'output_format',
  'service_tier',
  'speed',
  'stop_sequences',
  'stream',
  'system',
  'thinking',
  'tool_choice',
  'tools',
  'user_profile_id',
  'workspace_id',
  // Accepted by the models before generation 5 (a later model refuses them itself).
  'temperature',
  'top_k',
  'top_p',
]);

const BLOCK_TYPES = [
  'text',
  'image',
  'document',
  'search_result',
  'thinking',
  'redacted_thinking',
  'tool_use',
  'tool_result',
  'server_tool_use',
  'web_search_tool_result',
  'web_fetch_tool_result',
  'code_execution_tool_result',
  'container_upload',
];
const BLOCKS = new Set(BLOCK_TYPES);
const TOOL_CHOICES = new Set(['auto', 'any', 'tool', 'none']);

/**
 * The 400 the real API gives `body`, if it would refuse it (`undefined`: accepted). Expects a
 * body whose `model`, `messages` and `max_tokens` were already checked.
 *
 * @example
 * ```ts
 * refuseMessagesBody({ model: 'claude-sonnet-5', max_tokens: 9, messages: [], n: 2 })?.message;
 * // => 'n: Extra inputs are not permitted'
 * ```
 */
export function refuseMessagesBody(body: Record<string, unknown>): InvalidRequest | undefined {
  for (const key of Object.keys(body)) {
    if (!MESSAGES_FIELDS.has(key)) return { message: `${key}: Extra inputs are not permitted` };
  }
  const system = body['system'];
  if (system !== undefined && typeof system !== 'string') {
    const bad = !Array.isArray(system) || system.some((b) => !isRecord(b) || b['type'] !== 'text');
    if (bad) return { message: 'system: Input should be a valid string or a list of text blocks' };
  }
  const messages = body['messages'] as unknown[];
  let open: Set<string> | undefined;
  for (const [i, m] of messages.entries()) {
    const message = m as Record<string, unknown>;
    const role = message['role'];
    if (role !== 'user' && role !== 'assistant') {
      return { message: `messages.${i}.role: Input should be 'user' or 'assistant'` };
    }
    const blocks = Array.isArray(message['content']) ? message['content'] : [];
    if (typeof message['content'] !== 'string' && !Array.isArray(message['content'])) {
      return { message: `messages.${i}.content: Input should be a valid string or list` };
    }
    const results = new Set<string>();
    for (const [j, block] of blocks.entries()) {
      const problem = badBlock(block, `messages.${i}.content.${j}`);
      if (problem !== undefined) return { message: problem };
      const b = block as Record<string, unknown>;
      if (b['type'] === 'tool_result') results.add(String(b['tool_use_id']));
    }
    if (open !== undefined) {
      const missing = [...open].filter((id) => !results.has(id));
      if (missing.length > 0) {
        return {
          message:
            `messages.${i - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. ` +
            'Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
        };
      }
    }
    const unexpected = [...results].filter((id) => !(open?.has(id) ?? false));
    if (unexpected.length > 0) {
      return {
        message:
          `messages.${i}.content.0: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${unexpected.join(', ')}. ` +
          'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
      };
    }
    const uses = blocks.filter((b) => isRecord(b) && b['type'] === 'tool_use');
    open = uses.length > 0 ? new Set(uses.map((b) => String(b['id']))) : undefined;
  }
  if (open !== undefined && messages.length > 0) {
    // A final assistant turn with tool_use blocks is a prefill the API cannot continue.
    return {
      message: `messages.${messages.length - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${[...open].join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
    };
  }
  return badTools(body['tools']) ?? badToolChoice(body['tool_choice']);
}

function badBlock(block: unknown, at: string): string | undefined {
  const type = isRecord(block) ? block['type'] : undefined;
  if (typeof type !== 'string' || !BLOCKS.has(type)) {
    return (
      `${at}: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: ` +
      BLOCK_TYPES.map((t) => `'${t}'`).join(', ')
    );
  }
  const b = block as Record<string, unknown>;
  if (type === 'text' && typeof b['text'] !== 'string') return `${at}.text: Field required`;
  if (type === 'image') {
    const source = b['source'];
    if (!isRecord(source)) return `${at}.source: Field required`;
    if (source['type'] === 'base64') {
      if (typeof source['data'] !== 'string') return `${at}.source.base64.data: Field required`;
      if (typeof source['media_type'] !== 'string') {
        return `${at}.source.base64.media_type: Field required`;
      }
    } else if (source['type'] === 'url') {
      if (typeof source['url'] !== 'string') return `${at}.source.url.url: Field required`;
    } else if (source['type'] !== 'file') {
      return `${at}.source: Input tag '${String(source['type'])}' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'`;
    }
  }
  if (type === 'tool_use') {
    if (typeof b['id'] !== 'string') return `${at}.tool_use.id: Field required`;
    if (typeof b['name'] !== 'string') return `${at}.tool_use.name: Field required`;
    if (!isRecord(b['input'])) return `${at}.tool_use.input: Input should be a valid dictionary`;
  }
  if (type === 'tool_result' && typeof b['tool_use_id'] !== 'string') {
    return `${at}.tool_result.tool_use_id: Field required`;
  }
  return undefined;
}

function badTools(tools: unknown): InvalidRequest | undefined {
  if (tools === undefined) return undefined;
  if (!Array.isArray(tools)) return { message: 'tools: Input should be a valid list' };
  for (const [i, tool] of tools.entries()) {
    if (!isRecord(tool)) return { message: `tools.${i}: Input should be a valid dictionary` };
    const type = tool['type'];
    if (type !== undefined && type !== null && type !== 'custom') continue;
    if (typeof tool['name'] !== 'string')
      return { message: `tools.${i}.custom.name: Field required` };
    const schema = tool['input_schema'];
    if (!isRecord(schema)) return { message: `tools.${i}.custom.input_schema: Field required` };
    if (schema['type'] !== 'object') {
      return { message: `tools.${i}.custom.input_schema.type: Input should be 'object'` };
    }
  }
  return undefined;
}

function badToolChoice(choice: unknown): InvalidRequest | undefined {
  if (choice === undefined) return undefined;
  if (!isRecord(choice))
    return { message: 'tool_choice: Input should be a valid dictionary or object' };
  if (typeof choice['type'] !== 'string' || !TOOL_CHOICES.has(choice['type'])) {
    return {
      message: `tool_choice: Input tag '${String(choice['type'])}' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'`,
    };
  }
  if (choice['type'] === 'tool' && typeof choice['name'] !== 'string') {
    return { message: 'tool_choice.tool.name: Field required' };
  }
  return undefined;
}

import { MessageStream } from '@anthropic-ai/sdk/lib/MessageStream';
import type {
  ContentBlock,
  Message,
  MessageCreateParamsNonStreaming,
  RawMessageStreamEvent,
} from '@anthropic-ai/sdk/resources/messages';
import { ChatCompletionStream } from 'openai/lib/ChatCompletionStream';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';

import { chatCompletionToMessage, messageToChatCompletion } from '../../src/translate/answers';
import { chunksToMessageEvents, messageEventsToChunks } from '../../src/translate/streams';
import { maxOutputOf } from '../../src/translate/max-output';

import { chatToMessages } from '../../src/translate/chat-to-messages';
import { messagesToChat } from '../../src/translate/messages-to-chat';
import { refuseChatBody } from '../../src/testing/wire/strict-chat';
import { refuseMessagesBody } from '../../src/testing/wire/strict-messages';

const GPT = 'gpt-4o';
const CLAUDE = 'claude-sonnet-5';
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
const schema = {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer' } },
  required: ['city'],
};
const fn = (name: string, description?: string) => ({
  type: 'function' as const,
  function: { name, parameters: schema, ...(description ? { description } : {}) },
});
const tool = (name: string) => ({ name, input_schema: schema as { type: 'object' } });
const call = (id: string, name: string, args: object) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: JSON.stringify(args) },
});
const u = (content: string) => ({ role: 'user' as const, content });
const a = (content: string) => ({ role: 'assistant' as const, content });

type Chat = Omit<ChatCompletionCreateParamsNonStreaming, 'model'>;
type Claude = Omit<MessageCreateParamsNonStreaming, 'model'>;

/** Chat Completions request shapes: each goes to Messages and back. */
const CHAT: Record<string, Chat> = {
  'one user turn': { messages: [u('Hi')] },
  'system prompt': { messages: [{ role: 'system', content: 'Be brief.' }, u('Hi')] },
  'developer prompt': { messages: [{ role: 'developer', content: 'Be terse.' }, u('Hi')] },
  'system as text parts': {
    messages: [
      {
        role: 'system',
        content: [
          { type: 'text', text: 'A' },
          { type: 'text', text: 'B' },
        ],
      },
      u('x'),
    ],
  },
  'two system messages': {
    messages: [{ role: 'system', content: 'one' }, { role: 'developer', content: 'two' }, u('x')],
  },
  'multi-turn': { messages: [u('Hi'), a('Hello!'), u('How are you?')] },
  'long multi-turn': { messages: [u('1'), a('2'), u('3'), a('4'), u('5'), a('6'), u('7')] },
  'user text parts': {
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
    ],
  },
  'image by URL': {
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what?' },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
        ],
      },
    ],
  },
  'image in base64': {
    messages: [
      {
        role: 'user',
        content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }],
      },
    ],
  },
  'two images': {
    messages: [
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${PNG}` } },
          { type: 'image_url', image_url: { url: 'https://example.com/b.webp' } },
          { type: 'text', text: 'compare' },
        ],
      },
    ],
  },
  max_tokens: { messages: [u('x')], max_tokens: 100 },
  max_completion_tokens: { messages: [u('x')], max_completion_tokens: 77 },
  'stop as a string': { messages: [u('x')], stop: 'END' },
  'stop sequences': { messages: [u('x')], stop: ['END', '###'] },
  'one tool': { messages: [u('x')], tools: [fn('get_weather', 'Weather of a city')] },
  'two tools': { messages: [u('x')], tools: [fn('a'), fn('b')] },
  'tool_choice auto': { messages: [u('x')], tools: [fn('a')], tool_choice: 'auto' },
  'tool_choice none': { messages: [u('x')], tools: [fn('a')], tool_choice: 'none' },
  'tool_choice required': { messages: [u('x')], tools: [fn('a')], tool_choice: 'required' },
  'tool_choice named': {
    messages: [u('x')],
    tools: [fn('a'), fn('b')],
    tool_choice: { type: 'function', function: { name: 'b' } },
  },
  'no parallel tool calls': {
    messages: [u('x')],
    tools: [fn('a')],
    tool_choice: 'required',
    parallel_tool_calls: false,
  },
  'a tool call and its result': {
    messages: [
      u('weather?'),
      { role: 'assistant', content: null, tool_calls: [call('call_1', 'a', { city: 'Paris' })] },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ],
    tools: [fn('a')],
  },
  'parallel tool calls and results': {
    messages: [
      u('both'),
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          call('call_1', 'a', { city: 'Paris' }),
          call('call_2', 'b', { city: 'Rome', days: 2 }),
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      { role: 'tool', tool_call_id: 'call_2', content: 'rain' },
    ],
    tools: [fn('a'), fn('b')],
  },
  'text beside a tool call': {
    messages: [
      u('go'),
      { role: 'assistant', content: 'Let me look.', tool_calls: [call('call_9', 'a', {})] },
      { role: 'tool', tool_call_id: 'call_9', content: 'ok' },
      a('Done.'),
      u('thanks'),
    ],
    tools: [fn('a')],
  },
  'tool result as text parts': {
    messages: [
      u('go'),
      { role: 'assistant', content: null, tool_calls: [call('c', 'a', { city: 'x' })] },
      { role: 'tool', tool_call_id: 'c', content: [{ type: 'text', text: 'part' }] },
    ],
    tools: [fn('a')],
  },
  json_schema: {
    messages: [u('city')],
    response_format: { type: 'json_schema', json_schema: { name: 'output', schema, strict: true } },
  },
  'json_schema with system and tools': {
    messages: [{ role: 'system', content: 's' }, u('city')],
    tools: [fn('a')],
    response_format: { type: 'json_schema', json_schema: { name: 'output', schema, strict: true } },
  },
  'safety identifier': { messages: [u('x')], safety_identifier: 'user-42' },
  'everything at once': {
    messages: [{ role: 'system', content: 'sys' }, u('q'), a('r'), u('q2')],
    max_completion_tokens: 300,
    stop: ['Z'],
    tools: [fn('a'), fn('b')],
    tool_choice: 'auto',
    safety_identifier: 'u1',
  },
};

/** Messages request shapes: each goes to Chat Completions and back. */
const CLAUDE_SHAPES: Record<string, Claude> = {
  'one user turn': { max_tokens: 10, messages: [u('Hi')] },
  'system string': { max_tokens: 10, system: 'Be brief.', messages: [u('Hi')] },
  'system blocks': {
    max_tokens: 10,
    system: [
      { type: 'text', text: 'A' },
      { type: 'text', text: 'B' },
    ],
    messages: [u('Hi')],
  },
  'multi-turn': { max_tokens: 10, messages: [u('Hi'), a('Hello'), u('More')] },
  'text blocks': {
    max_tokens: 10,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
    ],
  },
  'image base64': {
    max_tokens: 10,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
          { type: 'text', text: 'what' },
        ],
      },
    ],
  },
  'image URL': {
    max_tokens: 10,
    messages: [
      {
        role: 'user',
        content: [{ type: 'image', source: { type: 'url', url: 'https://x.dev/i.gif' } }],
      },
    ],
  },
  'stop sequences': { max_tokens: 10, stop_sequences: ['END'], messages: [u('x')] },
  'one tool': {
    max_tokens: 10,
    tools: [{ ...tool('a'), description: 'does a' }],
    messages: [u('x')],
  },
  'tool_choice auto': {
    max_tokens: 10,
    tools: [tool('a')],
    tool_choice: { type: 'auto' },
    messages: [u('x')],
  },
  'tool_choice any': {
    max_tokens: 10,
    tools: [tool('a')],
    tool_choice: { type: 'any' },
    messages: [u('x')],
  },
  'tool_choice none': {
    max_tokens: 10,
    tools: [tool('a')],
    tool_choice: { type: 'none' },
    messages: [u('x')],
  },
  'tool_choice tool': {
    max_tokens: 10,
    tools: [tool('a'), tool('b')],
    tool_choice: { type: 'tool', name: 'b' },
    messages: [u('x')],
  },
  'no parallel tool use': {
    max_tokens: 10,
    tools: [tool('a')],
    tool_choice: { type: 'any', disable_parallel_tool_use: true },
    messages: [u('x')],
  },
  'tool use and result': {
    max_tokens: 10,
    tools: [tool('a')],
    messages: [
      u('go'),
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'a', input: { city: 'P' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sun' }] },
    ],
  },
  'parallel tool use and results': {
    max_tokens: 10,
    tools: [tool('a'), tool('b')],
    messages: [
      u('go'),
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Both.' },
          { type: 'tool_use', id: 't1', name: 'a', input: {} },
          { type: 'tool_use', id: 't2', name: 'b', input: { city: 'R', days: 1 } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 't1', content: 'x' },
          { type: 'tool_result', tool_use_id: 't2', content: [{ type: 'text', text: 'y' }] },
        ],
      },
    ],
  },
  'tool result then words': {
    max_tokens: 10,
    tools: [tool('a')],
    messages: [
      u('go'),
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'a', input: {} }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 't1', content: 'x' },
          { type: 'text', text: 'and now?' },
        ],
      },
    ],
  },
  'output format': {
    max_tokens: 10,
    output_config: { format: { type: 'json_schema', schema } },
    messages: [u('x')],
  },
  'metadata user': { max_tokens: 10, metadata: { user_id: 'u-1' }, messages: [u('x')] },
  'everything at once': {
    max_tokens: 500,
    system: 'sys',
    stop_sequences: ['A', 'B'],
    tools: [tool('a')],
    tool_choice: { type: 'auto' },
    metadata: { user_id: 'u' },
    messages: [u('1'), a('2'), u('3')],
  },
};

/** The forms one meaning takes in Chat Completions, made one: what the table maps is compared. */
function canonicalChat(body: Record<string, unknown>): unknown {
  const out: Record<string, unknown> = { ...body };
  delete out['model'];
  if (out['max_tokens'] !== undefined) {
    out['max_completion_tokens'] = out['max_tokens'];
    delete out['max_tokens'];
  }
  if (typeof out['stop'] === 'string') out['stop'] = [out['stop']];
  const messages: Record<string, unknown>[] = [];
  let system: string[] = [];
  for (const m of body['messages'] as Record<string, unknown>[]) {
    const text = (c: unknown) =>
      typeof c === 'string' ? c : (c as { text: string }[]).map((p) => p.text).join('\u0000');
    if (m['role'] === 'system' || m['role'] === 'developer') {
      system = [...system, text(m['content'])];
      continue;
    }
    const content = m['content'];
    const parts = Array.isArray(content)
      ? (content as { type: string; text?: string }[])
      : undefined;
    messages.push({
      ...m,
      content: parts?.every((p) => p.type === 'text') ? text(parts) : content,
    });
  }
  out['messages'] = [
    ...(system.length ? [{ role: 'system', content: system.join('\u0000') }] : []),
    ...messages,
  ];
  return out;
}

function canonicalClaude(body: Record<string, unknown>): unknown {
  const out: Record<string, unknown> = { ...body };
  delete out['model'];
  const text = (c: unknown) =>
    typeof c === 'string' ? c : (c as { text: string }[]).map((p) => p.text).join('\u0000');
  if (out['system'] !== undefined) out['system'] = text(out['system']);
  out['messages'] = (body['messages'] as Record<string, unknown>[]).map((m) => {
    const c = m['content'];
    const blocks = Array.isArray(c) ? (c as { type: string }[]) : undefined;
    return { ...m, content: blocks?.every((b) => b.type === 'text') ? text(blocks) : c };
  });
  return out;
}

describe('translation corpus: each shape there and back, accepted by both APIs', () => {
  it('holds at least 50 request shapes', () => {
    expect(Object.keys(CHAT).length + Object.keys(CLAUDE_SHAPES).length).toBeGreaterThanOrEqual(50);
  });

  it.each(Object.entries(CHAT))('Chat Completions → Messages → back: %s', (_name, shape) => {
    const chat = { model: GPT, ...shape } as Record<string, unknown>;
    expect(refuseChatBody(chat)).toBeUndefined();
    const there = chatToMessages(chat, { model: CLAUDE, maxTokens: 1024 });
    if (!('body' in there)) throw new Error(`refused: ${there.refused.field}`);
    const claude = there.body as unknown as Record<string, unknown>;
    expect(claude['model']).toBe(CLAUDE);
    // The Messages API would take it (the simulated route refuses what the real one does).
    expect(refuseMessagesBody(claude)).toBeUndefined();
    const back = messagesToChat(claude, GPT);
    if (!('body' in back)) throw new Error(`refused back: ${back.refused.field}`);
    const returned = back.body as unknown as Record<string, unknown>;
    expect(returned['model']).toBe(GPT);
    expect(refuseChatBody(returned)).toBeUndefined();
    const capped = chat['max_completion_tokens'] ?? chat['max_tokens'];
    const expected = canonicalChat({ ...chat, max_completion_tokens: capped ?? 1024 });
    expect(canonicalChat(returned)).toEqual(expected);
  });

  it.each(Object.entries(CLAUDE_SHAPES))(
    'Messages → Chat Completions → back: %s',
    (_name, shape) => {
      const claude = { model: CLAUDE, ...shape } as Record<string, unknown>;
      expect(refuseMessagesBody(claude)).toBeUndefined();
      const there = messagesToChat(claude, GPT);
      if (!('body' in there)) throw new Error(`refused: ${there.refused.field}`);
      const chat = there.body as unknown as Record<string, unknown>;
      expect(refuseChatBody(chat)).toBeUndefined();
      const back = chatToMessages(chat, { model: CLAUDE, maxTokens: 1 });
      if (!('body' in back)) throw new Error(`refused back: ${back.refused.field}`);
      const returned = back.body as unknown as Record<string, unknown>;
      expect(refuseMessagesBody(returned)).toBeUndefined();
      expect(canonicalClaude(returned)).toEqual(canonicalClaude(claude));
    },
  );
});

/** Claude answers, each told back as a ChatCompletion, and streamed as Claude would stream it. */
const MESSAGES: Record<string, Message> = {
  text: message([{ type: 'text', text: 'Hello there, how are you?', citations: null }], 'end_turn'),
  'cut at max_tokens': message([{ type: 'text', text: 'partial', citations: null }], 'max_tokens'),
  'one tool call': message([toolUse('toolu_1', 'get_weather', { city: 'Paris' })], 'tool_use'),
  'parallel tool calls': message(
    [
      { type: 'text', text: 'Checking both.', citations: null },
      toolUse('toolu_1', 'get_weather', { city: 'Paris', days: 3 }),
      toolUse('toolu_2', 'get_time', { zone: 'Europe/Rome' }),
    ],
    'tool_use',
  ),
  'cached input': message([{ type: 'text', text: 'ok', citations: null }], 'end_turn', {
    input_tokens: 12,
    cache_read_input_tokens: 900,
    cache_creation_input_tokens: 30,
  }),
};

function toolUse(id: string, name: string, input: object): ContentBlock {
  return { type: 'tool_use', id, name, input, caller: { type: 'direct' } } as ContentBlock;
}

function message(
  content: ContentBlock[],
  stop: Message['stop_reason'],
  usage: Partial<Message['usage']> = {},
): Message {
  return {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: CLAUDE,
    content,
    container: null,
    diagnostics: null,
    stop_details: null,
    stop_reason: stop,
    stop_sequence: null,
    usage: {
      input_tokens: 20,
      output_tokens: 7,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_creation: null,
      inference_geo: null,
      output_tokens_details: null,
      server_tool_use: null,
      service_tier: 'standard',
      speed: null,
      ...usage,
    },
  };
}

/** The events Claude streams for `m`: text in words, tool input in 5-character pieces. */
async function* claudeEvents(m: Message): AsyncGenerator<RawMessageStreamEvent> {
  yield {
    type: 'message_start',
    message: { ...m, content: [], stop_reason: null, usage: { ...m.usage, output_tokens: 1 } },
  };
  for (const [index, block] of m.content.entries()) {
    if (block.type === 'text') {
      yield { type: 'content_block_start', index, content_block: { ...block, text: '' } };
      for (const text of block.text.match(/\S+\s*/g) ?? []) {
        yield { type: 'content_block_delta', index, delta: { type: 'text_delta', text } };
      }
    } else if (block.type === 'tool_use') {
      yield { type: 'content_block_start', index, content_block: { ...block, input: {} } };
      const json = JSON.stringify(block.input);
      for (let i = 0; i < json.length; i += 5) {
        yield {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: json.slice(i, i + 5) },
        };
      }
    }
    yield { type: 'content_block_stop', index };
  }
  yield {
    type: 'message_delta',
    delta: { stop_reason: m.stop_reason, stop_sequence: null, container: null, stop_details: null },
    usage: {
      input_tokens: null,
      output_tokens: m.usage.output_tokens,
      cache_read_input_tokens: null,
      cache_creation_input_tokens: null,
      output_tokens_details: null,
      server_tool_use: null,
    },
  } as RawMessageStreamEvent;
  yield { type: 'message_stop' };
}

/** An async iterable as the newline-delimited JSON the SDKs' `fromReadableStream` read. */
function lines(source: AsyncIterable<unknown>): ReadableStream<Uint8Array> {
  const iterator = source[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  return new ReadableStream({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(`${JSON.stringify(next.value)}\n`));
    },
  });
}

describe('translation corpus: answers and streams, read by the SDKs’ own helpers', () => {
  it.each(Object.entries(MESSAGES))('Message → ChatCompletion → Message: %s', (_name, m) => {
    const completion = messageToChatCompletion(m, CLAUDE, 1);
    const back = chatCompletionToMessage(completion, CLAUDE);
    expect(back.content).toEqual(
      m.content.map((b) => (b.type === 'text' ? { ...b, citations: null } : b)),
    );
    expect(back.stop_reason).toBe(m.stop_reason);
    const u = m.usage;
    expect(completion.usage).toEqual({
      prompt_tokens:
        u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0),
      completion_tokens: u.output_tokens,
      total_tokens:
        u.input_tokens +
        (u.cache_read_input_tokens ?? 0) +
        (u.cache_creation_input_tokens ?? 0) +
        u.output_tokens,
      prompt_tokens_details: { cached_tokens: u.cache_read_input_tokens ?? 0 },
    });
  });

  it.each(Object.entries(MESSAGES))(
    'Claude stream → chunks → ChatCompletionStream.finalChatCompletion(): %s',
    async (_name, m) => {
      const chunks = messageEventsToChunks(claudeEvents(m), {
        model: CLAUDE,
        created: 1,
        includeUsage: true,
      });
      const final = await ChatCompletionStream.fromReadableStream(
        lines(chunks),
      ).finalChatCompletion();
      const expected = messageToChatCompletion(m, CLAUDE, 1);
      expect(final.choices[0]!.message.content ?? null).toEqual(
        expected.choices[0]!.message.content,
      );
      expect(final.choices[0]!.message.tool_calls ?? []).toEqual(
        (expected.choices[0]!.message.tool_calls ?? []).map((c) => expect.objectContaining(c)),
      );
      expect(final.choices[0]!.finish_reason).toBe(expected.choices[0]!.finish_reason);
      expect(final.usage).toEqual(expected.usage);
    },
  );

  it.each(Object.entries(MESSAGES))(
    'chunks → Claude events → MessageStream.finalMessage(): %s',
    async (_name, m) => {
      const chunks = messageEventsToChunks(claudeEvents(m), {
        model: CLAUDE,
        created: 1,
        includeUsage: true,
      });
      const events = chunksToMessageEvents(chunks, { model: GPT });
      const final = await MessageStream.fromReadableStream(lines(events)).finalMessage();
      const expected = chatCompletionToMessage(messageToChatCompletion(m, CLAUDE, 1), GPT);
      expect(final.model).toBe(GPT);
      expect(final.content).toEqual(
        expected.content.map((b) => expect.objectContaining({ type: b.type, ...contentOf(b) })),
      );
      expect(final.stop_reason).toBe(expected.stop_reason);
      expect(final.usage.output_tokens).toBe(m.usage.output_tokens);
      expect(final.usage.input_tokens).toBe(
        m.usage.input_tokens + (m.usage.cache_creation_input_tokens ?? 0),
      );
      expect(final.usage.cache_read_input_tokens).toBe(m.usage.cache_read_input_tokens);
    },
  );
});

function contentOf(b: ContentBlock): object {
  if (b.type === 'text') return { text: b.text };
  if (b.type === 'tool_use') return { id: b.id, name: b.name, input: b.input };
  return {};
}

describe('translation corpus: what is refused names its field', () => {
  it.each<[string, Record<string, unknown>]>([
    ['n', { n: 2 }],
    ['logprobs', { logprobs: true }],
    ['top_logprobs', { top_logprobs: 2 }],
    ['audio', { audio: { voice: 'alloy', format: 'mp3' } }],
    ['modalities', { modalities: ['text', 'audio'] }],
    ['web_search_options', { web_search_options: {} }],
    ['temperature', { temperature: 0.2 }],
    ['seed', { seed: 7 }],
    ['response_format', { response_format: { type: 'json_object' } }],
    [
      'messages[0].content[0].input_audio',
      {
        messages: [
          {
            role: 'user',
            content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }],
          },
        ],
      },
    ],
    [
      'messages[0].content[0].file',
      {
        messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-1' } }] }],
      },
    ],
    ['messages[1].role', { messages: [u('a'), { role: 'system', content: 'late' }] }],
    ['tools[0].type', { tools: [{ type: 'custom', custom: { name: 'x' } }] }],
  ])('Chat Completions → Messages refuses %s', (field, extra) => {
    const out = chatToMessages(
      { model: GPT, messages: [u('x')], ...extra },
      { model: CLAUDE, maxTokens: 9 },
    );
    expect('refused' in out && out.refused.field).toBe(field);
  });

  it.each<[string, Record<string, unknown>]>([
    ['cache_control', { cache_control: { type: 'ephemeral' } }],
    [
      'system[0].cache_control',
      { system: [{ type: 'text', text: 's', cache_control: { type: 'ephemeral' } }] },
    ],
    ['thinking', { thinking: { type: 'enabled', budget_tokens: 1024 } }],
    ['tools[0]', { tools: [{ type: 'web_search_20250305', name: 'web_search' }] }],
    [
      'messages[0].content[0].source.file_id',
      {
        messages: [
          { role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] },
        ],
      },
    ],
    [
      'messages[0].content[0].type',
      {
        messages: [
          { role: 'assistant', content: [{ type: 'thinking', thinking: 'x', signature: 's' }] },
        ],
      },
    ],
    ['top_k', { top_k: 5 }],
  ])('Messages → Chat Completions refuses %s', (field, extra) => {
    const out = messagesToChat({ model: CLAUDE, max_tokens: 9, messages: [u('x')], ...extra }, GPT);
    expect('refused' in out && out.refused.field).toBe(field);
  });
});

describe('max_tokens for Claude when the caller set none', () => {
  it('is the deployment’s outputReservation, else the documented maximum, else 8 192', () => {
    expect(maxOutputOf('claude-sonnet-5', 2048)).toBe(2048);
    expect(maxOutputOf('claude-sonnet-4-5', 0)).toBe(64_000);
    expect(maxOutputOf('claude-opus-4-1', 0)).toBe(32_000);
    expect(maxOutputOf('claude-sonnet-5', 0)).toBe(8_192);
  });
});

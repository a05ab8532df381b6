import Anthropic, { BadRequestError as AnthropicBadRequestError } from '@anthropic-ai/sdk';
import OpenAI, { BadRequestError } from 'openai';

import { SimulatedUpstream } from 'nestjs-switchboard/testing';

const GPT = 'gpt-4o';
const CLAUDE = 'claude-sonnet-5';

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
    },
  },
};
const time = {
  type: 'function' as const,
  function: {
    name: 'get_time',
    parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] },
  },
};
const claudeTool = (t: typeof weather | typeof time) => ({
  name: t.function.name,
  input_schema: t.function.parameters as Anthropic.Tool.InputSchema,
});

async function thrown(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('simulated deployments: tool calls and the APIs’ own 400s', () => {
  let upstream: SimulatedUpstream;
  let openai: OpenAI;
  let anthropic: Anthropic;

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({ deployments: [{ name: 'd' }] });
    const d = upstream.deployment('d');
    openai = new OpenAI({ baseURL: d.openaiBaseURL, apiKey: 'k', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: d.anthropicBaseURL, apiKey: 'k', maxRetries: 0 });
  });
  afterAll(() => upstream.close());

  it('Chat Completions: a forced tool is called with arguments sampled from its schema', async () => {
    const c = await openai.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'Paris?' }],
      tools: [weather, time],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    const choice = c.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls![0]!;
    expect(call.type === 'function' && call.function.name).toBe('get_weather');
    expect(call.type === 'function' && typeof JSON.parse(call.function.arguments).city).toBe(
      'string',
    );
  });

  it('Chat Completions: `required` calls every tool in parallel, streamed as argument deltas', async () => {
    const stream = openai.chat.completions.stream({
      model: GPT,
      messages: [{ role: 'user', content: 'now' }],
      tools: [weather, time],
      tool_choice: 'required',
    });
    let deltas = 0;
    stream.on('tool_calls.function.arguments.delta', () => deltas++);
    const final = await stream.finalChatCompletion();
    const calls = final.choices[0]!.message.tool_calls!;
    expect(calls.map((c) => c.type === 'function' && c.function.name)).toEqual([
      'get_weather',
      'get_time',
    ]);
    expect(deltas).toBeGreaterThan(2);
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
  });

  it('Chat Completions: auto calls a tool the user names, then answers in text after its result', async () => {
    const first = await openai.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'use get_time please' }],
      tools: [weather, time],
      parallel_tool_calls: false,
    });
    const calls = first.choices[0]!.message.tool_calls!;
    expect(calls).toHaveLength(1);
    const second = await openai.chat.completions.create({
      model: GPT,
      messages: [
        { role: 'user', content: 'use get_time please' },
        first.choices[0]!.message,
        { role: 'tool', tool_call_id: calls[0]!.id, content: '12:00' },
      ],
      tools: [weather, time],
    });
    expect(second.choices[0]!.finish_reason).toBe('stop');
    expect(second.choices[0]!.message.content).toBe('use get_time please');
  });

  it('Messages: a forced tool answers with tool_use, streamed as input_json_delta', async () => {
    const created = await anthropic.messages.create({
      model: CLAUDE,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'Paris?' }],
      tools: [claudeTool(weather), claudeTool(time)],
      tool_choice: { type: 'any' },
    });
    expect(created.stop_reason).toBe('tool_use');
    expect(created.content.map((b) => b.type)).toEqual(['tool_use', 'tool_use']);
    const stream = anthropic.messages.stream({
      model: CLAUDE,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'Paris?' }],
      tools: [claudeTool(weather)],
      tool_choice: { type: 'tool', name: 'get_weather' },
    });
    let partial = 0;
    stream.on('inputJson', () => partial++);
    const final = await stream.finalMessage();
    const block = final.content[0]!;
    expect(block.type === 'tool_use' && block.name).toBe('get_weather');
    expect(block.type === 'tool_use' && typeof (block.input as { city: unknown }).city).toBe(
      'string',
    );
    expect(partial).toBeGreaterThan(1);
  });

  it('Messages: tool results answer in text', async () => {
    const answer = await anthropic.messages.create({
      model: CLAUDE,
      max_tokens: 100,
      tools: [claudeTool(weather)],
      messages: [
        { role: 'user', content: 'get_weather Paris' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} }],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sun' }],
        },
      ],
    });
    expect(answer.stop_reason).toBe('end_turn');
    expect(answer.content).toEqual([{ type: 'text', text: 'sun' }]);
  });

  it.each([
    [{ n: 2 }, 'n: Extra inputs are not permitted'],
    [{ response_format: { type: 'json_object' } }, 'response_format: Extra inputs'],
    [
      { messages: [{ role: 'system', content: 'x' }] },
      "messages.0.role: Input should be 'user' or 'assistant'",
    ],
    [
      { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'u' } }] }] },
      "Input tag 'image_url'",
    ],
    [
      {
        messages: [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: {} }] },
          { role: 'user', content: 'b' },
        ],
      },
      '`tool_use` ids were found without `tool_result` blocks immediately after: t1',
    ],
    [{ tool_choice: 'auto' }, 'tool_choice: Input should be a valid dictionary'],
  ])('Messages refuses %j as the API does', async (extra, words) => {
    const error = await thrown(() =>
      anthropic.messages.create({
        model: CLAUDE,
        max_tokens: 10,
        messages: [{ role: 'user', content: 'x' }],
        ...(extra as object),
      } as never),
    );
    expect(error).toBeInstanceOf(AnthropicBadRequestError);
    expect((error as Error).message).toContain(words);
  });

  it.each([
    [{ stop_sequences: ['x'] }, 'Unrecognized request argument supplied: stop_sequences'],
    [{ system: 'be brief' }, 'Unrecognized request argument supplied: system'],
    [
      { messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] },
      "Invalid value: 'image'",
    ],
    [
      { messages: [{ role: 'tool', tool_call_id: 'c1', content: 'x' }] },
      "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
    ],
    [
      {
        messages: [
          { role: 'user', content: 'a' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
        ],
      },
      'The following tool_call_ids did not have response messages: c1',
    ],
  ])('Chat Completions refuses %j as the API does', async (extra, words) => {
    const error = await thrown(() =>
      openai.chat.completions.create({
        model: GPT,
        messages: [{ role: 'user', content: 'x' }],
        ...(extra as object),
      } as never),
    );
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as Error).message).toContain(words);
  });
});

import { metrics } from '@opentelemetry/api';
import { MeterProvider, type DataPoint } from '@opentelemetry/sdk-metrics';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { ChatCompletion } from 'openai/resources/chat/completions';
import type { ChatCompletionStreamingToolRunnerParams } from 'openai/lib/ChatCompletionStreamingRunner';
import { createSwitchboard, type Price, type Switchboard } from 'nestjs-switchboard';
import { METER_NAME, SWITCHBOARD_METRICS } from 'nestjs-switchboard/extend';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { TestReader } from '../support/metric-reader';

const GPT = 'gpt-4o';
const CLAUDE = 'claude-sonnet-5';
const CLAUDE_PRICE: Price = { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 };
const GPT_PRICE: Price = { input: 2.5, output: 10, cachedInput: 1.25 };
const NOW = 1_765_000_000_000;

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
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
const PIXEL =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

/**
 * Two OpenAI deployments of gpt-4o whose one request a minute is spent, and one Claude
 * deployment: every gpt-4o call has to go elsewhere. The clock stands still, so no room returns.
 */
async function setup(reverse = false): Promise<{
  upstream: SimulatedUpstream;
  sb: Switchboard;
  full: () => number;
  claudeRequests: () => number;
}> {
  const upstream = await SimulatedUpstream.start({
    deployments: [{ name: 'east' }, { name: 'west' }, { name: 'claude' }],
  });
  const small = { tpm: 1_000_000, rpm: 1 };
  const large = { tpm: 10_000_000, rpm: 10_000 };
  const sb = createSwitchboard({
    clock: () => NOW,
    ratelimitWindow: 0,
    deployments: ['east', 'west']
      .map((name) => ({
        provider: 'openai' as const,
        name,
        baseURL: upstream.deployment(name).openaiBaseURL,
        apiKey: 'k',
        models: [{ name: GPT, ...(reverse ? large : small) }],
      }))
      .concat([
        {
          provider: 'anthropic' as never,
          name: 'claude',
          baseURL: upstream.deployment('claude').anthropicBaseURL,
          apiKey: 'k',
          models: [{ name: CLAUDE, ...(reverse ? small : large) }],
        },
      ]),
    fallbacks: reverse ? { [CLAUDE]: [GPT] } : { [GPT]: [CLAUDE] },
    pricing: { [GPT]: GPT_PRICE, [CLAUDE]: CLAUDE_PRICE },
  });
  const count = (names: string[]) =>
    names.reduce((n, name) => n + upstream.deployment(name).requests.length, 0);
  return {
    upstream,
    sb,
    full: () => count(reverse ? ['claude'] : ['east', 'west']),
    claudeRequests: () => count(['claude']),
  };
}

describe('fallback across vendors: Chat Completions answered by Claude', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard;
  let full: () => number;
  let claudeRequests: () => number;
  let before = 0;
  let reader: TestReader;
  let provider: MeterProvider;

  beforeAll(async () => {
    reader = new TestReader();
    provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
    ({ upstream, sb, full, claudeRequests } = await setup());
    // Spend the one request of each gpt-4o deployment: from now on, every one is full.
    for (let i = 0; i < 2; i++) {
      await sb.chat.completions.create({
        model: GPT,
        messages: [{ role: 'user', content: 'warm' }],
      });
    }
    before = full();
    expect(before).toBe(2);
  });
  afterAll(async () => {
    await sb.close();
    await upstream.close();
    await provider.shutdown();
    metrics.disable();
  });
  afterEach(() => expect(full()).toBe(before));

  it('a plain call: a valid ChatCompletion whose model names Claude, its usage and cost as Claude reported them', async () => {
    const costBefore = sb.costs()['other'] ?? 0;
    const c = await sb.chat.completions.create({
      model: GPT,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello there' },
      ],
      max_tokens: 50,
      stop: ['END'],
    });
    expect(c.object).toBe('chat.completion');
    expect(c.model).toBe(CLAUDE);
    expect(c.choices[0]!.message.content).toBe('Hello there');
    expect(c.choices[0]!.finish_reason).toBe('stop');
    const sent = upstream.deployment('claude').requests.at(-1)!
      .body as Anthropic.MessageCreateParams;
    expect(sent.system).toEqual([{ type: 'text', text: 'Be brief.' }]);
    expect(sent.stop_sequences).toEqual(['END']);
    expect(sent.max_tokens).toBe(50);
    // What Claude reports for that very body, asked directly.
    const direct = await new Anthropic({
      baseURL: upstream.deployment('claude').anthropicBaseURL,
      apiKey: 'k',
      maxRetries: 0,
    }).messages.create({ ...sent, stream: false });
    const u = direct.usage;
    expect(c.usage).toMatchObject({
      prompt_tokens: u.input_tokens + (u.cache_read_input_tokens ?? 0),
      completion_tokens: u.output_tokens,
    });
    const usd = (u.input_tokens * CLAUDE_PRICE.input + u.output_tokens * CLAUDE_PRICE.output) / 1e6;
    expect((sb.costs()['other'] ?? 0) - costBefore).toBeCloseTo(usd, 12);
  });

  it('streamed: finalChatCompletion() of the SDK helper, usage chunk included', async () => {
    const stream = sb.chat.completions.stream({
      model: GPT,
      messages: [{ role: 'user', content: 'stream these words please' }],
      stream_options: { include_usage: true },
    });
    const chunks: string[] = [];
    stream.on('content', (delta) => chunks.push(delta));
    const final = await stream.finalChatCompletion();
    expect(final.model).toBe(CLAUDE);
    expect(final.choices[0]!.message.content).toBe('stream these words please');
    expect(chunks.length).toBeGreaterThan(1);
    expect(final.usage?.completion_tokens).toBeGreaterThan(0);
  });

  it('streamed without include_usage: no usage chunk the caller did not ask for', async () => {
    const stream = await sb.chat.completions.create({
      model: GPT,
      stream: true,
      messages: [{ role: 'user', content: 'no usage please' }],
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.some((c) => c.usage)).toBe(false);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('no usage please');
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
  });

  it('tools, parallel calls, streamed: runTools completes the loop through Claude', async () => {
    const seen: string[] = [];
    // The SDK's runnable tools: `function` and `parse` beside the definition.
    const runner = sb.chat.completions.runTools({
      model: GPT,
      stream: true,
      messages: [{ role: 'user', content: 'call get_weather and get_time' }],
      tools: [
        {
          type: 'function',
          function: {
            ...weather.function,
            function: (args: unknown) => (seen.push(`w:${JSON.stringify(args)}`), 'sunny'),
            parse: JSON.parse,
          },
        },
        {
          type: 'function',
          function: {
            ...time.function,
            function: (args: unknown) => (seen.push(`t:${JSON.stringify(args)}`), 'noon'),
            parse: JSON.parse,
          },
        },
      ],
    } as unknown as ChatCompletionStreamingToolRunnerParams<never>);
    const final = await runner.finalChatCompletion();
    expect(seen).toHaveLength(2);
    expect(final.model).toBe(CLAUDE);
    expect(final.choices[0]!.finish_reason).toBe('stop');
    const last = upstream.deployment('claude').requests.at(-1)!
      .body as Anthropic.MessageCreateParams;
    const results = (last.messages.at(-1)!.content as Anthropic.ContentBlockParam[]).map(
      (b) => b.type,
    );
    expect(results).toEqual(['tool_result', 'tool_result']);
  });

  it('tools, not streamed: a forced tool comes back as tool_calls', async () => {
    const c = await sb.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'Paris' }],
      tools: [weather, time],
      tool_choice: 'required',
    });
    expect(c.choices[0]!.finish_reason).toBe('tool_calls');
    const calls = c.choices[0]!.message.tool_calls!;
    expect(calls.map((x) => x.type === 'function' && x.function.name)).toEqual([
      'get_weather',
      'get_time',
    ]);
    expect(
      JSON.parse((calls[0] as { function: { arguments: string } }).function.arguments),
    ).toHaveProperty('city');
  });

  it('response_format json_schema: parse() gives the object', async () => {
    const parsed = await sb.chat.completions.parse({
      model: GPT,
      messages: [{ role: 'user', content: 'a city' }],
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'city',
          strict: true,
          schema: {
            type: 'object',
            properties: { name: { type: 'string' } },
            required: ['name'],
            additionalProperties: false,
          },
        },
      },
    });
    expect(typeof (parsed.choices[0]!.message.parsed as unknown as { name: unknown }).name).toBe(
      'string',
    );
    const sent = upstream.deployment('claude').requests.at(-1)!.body as Record<string, unknown>;
    expect(sent['output_config']).toMatchObject({ format: { type: 'json_schema' } });
  });

  it('an image (base64 and URL) goes as image blocks', async () => {
    const c: ChatCompletion = await sb.chat.completions.create({
      model: GPT,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PIXEL}` } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
          ],
        },
      ],
    });
    expect(c.choices[0]!.message.content).toBe('what is this');
    const sent = upstream.deployment('claude').requests.at(-1)!
      .body as Anthropic.MessageCreateParams;
    expect(sent.messages[0]!.content).toEqual([
      { type: 'text', text: 'what is this' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PIXEL } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
    ]);
  });

  it.each([
    [{ n: 2 }, 'n'],
    [{ logprobs: true }, 'logprobs'],
  ])(
    '%j: the fallback is skipped, the error names the field, Claude gets nothing',
    async (extra, field) => {
      const claudeBefore = claudeRequests();
      const error = await sb.chat.completions
        .create({ model: GPT, messages: [{ role: 'user', content: 'x' }], ...extra })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(OpenAI.RateLimitError);
      expect((error as Error).message).toContain(
        `Fallback ${CLAUDE} was skipped: the call's ${field} cannot be translated`,
      );
      expect(claudeRequests()).toBe(claudeBefore);
    },
  );

  it('Responses: text and function tools answered by Claude, streamed and not', async () => {
    const r = await sb.responses.create({
      model: GPT,
      instructions: 'Be brief.',
      input: 'responses here',
    });
    expect(r.object).toBe('response');
    expect(r.model).toBe(CLAUDE);
    expect(r.output_text).toBe('responses here');
    expect(r.usage!.output_tokens).toBeGreaterThan(0);
    const sent = upstream.deployment('claude').requests.at(-1)!
      .body as Anthropic.MessageCreateParams;
    expect(sent.system).toEqual([{ type: 'text', text: 'Be brief.' }]);
    const tools = await sb.responses.create({
      model: GPT,
      input: [{ role: 'user', content: 'Paris' }],
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          parameters: weather.function.parameters,
          strict: true,
        },
      ],
      tool_choice: 'required',
    });
    const call = tools.output.find((o) => o.type === 'function_call');
    expect(call?.type === 'function_call' && call.name).toBe('get_weather');
    const next = await sb.responses.create({
      model: GPT,
      input: [
        { role: 'user', content: 'Paris' },
        {
          type: 'function_call',
          call_id: (call as { call_id: string }).call_id,
          name: 'get_weather',
          arguments: '{"city":"Paris"}',
        },
        {
          type: 'function_call_output',
          call_id: (call as { call_id: string }).call_id,
          output: 'sunny',
        },
      ],
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          parameters: weather.function.parameters,
          strict: true,
        },
      ],
    });
    expect(next.output_text).toBe('sunny');
    const stream = sb.responses.stream({
      model: GPT,
      input: 'streamed responses words',
    });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('streamed responses words');
    expect(deltas.join('')).toBe('streamed responses words');
    expect(final.model).toBe(CLAUDE);
  });

  it('Responses streamed with parallel function calls: finalResponse() holds both calls', async () => {
    const stream = sb.responses.stream({
      model: GPT,
      input: 'x',
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          parameters: weather.function.parameters,
          strict: true,
        },
        { type: 'function', name: 'get_time', parameters: time.function.parameters, strict: true },
      ],
      tool_choice: 'required',
    });
    let args = 0;
    stream.on('response.function_call_arguments.delta', () => args++);
    const final = await stream.finalResponse();
    const calls = final.output.filter((o) => o.type === 'function_call');
    expect(calls.map((c) => c.type === 'function_call' && c.name)).toEqual([
      'get_weather',
      'get_time',
    ]);
    expect(JSON.parse((calls[1] as { arguments: string }).arguments)).toHaveProperty('zone');
    expect(args).toBeGreaterThan(2);
  });

  it('Responses: previous_response_id or a hosted tool skips the fallback, the error names it', async () => {
    const error = await sb.responses
      .create({ model: GPT, input: 'x', tools: [{ type: 'web_search' }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((error as Error).message).toContain("the call's tools[0] cannot be translated");
  });

  it('counts switchboard.fallbacks with translated="true"', async () => {
    const { resourceMetrics } = await reader.collect();
    const points = (resourceMetrics.scopeMetrics
      .filter((s) => s.scope.name === METER_NAME)
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === SWITCHBOARD_METRICS.FALLBACKS)?.dataPoints ??
      []) as DataPoint<number>[];
    const translated = points.filter(
      (p) => p.attributes['translated'] === 'true' && p.attributes['fallback'] === CLAUDE,
    );
    expect(translated.reduce((n, p) => n + p.value, 0)).toBeGreaterThanOrEqual(6);
  });
});

describe('fallback across vendors: Messages answered by gpt-4o', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard;
  let full: () => number;

  beforeAll(async () => {
    ({ upstream, sb, full } = await setup(true));
    await sb.messages.create({
      model: CLAUDE,
      max_tokens: 20,
      messages: [{ role: 'user', content: 'warm' }],
    });
    expect(full()).toBe(1);
  });
  afterAll(async () => {
    await sb.close();
    await upstream.close();
  });
  afterEach(() => expect(full()).toBe(1));

  it('messages.create: a valid Message whose model names gpt-4o', async () => {
    const m = await sb.messages.create({
      model: CLAUDE,
      max_tokens: 64,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Hello from Claude land' }],
    });
    expect(m.type).toBe('message');
    expect(m.model).toBe(GPT);
    expect(m.content).toEqual([{ type: 'text', text: 'Hello from Claude land', citations: null }]);
    expect(m.stop_reason).toBe('end_turn');
    expect(m.usage.output_tokens).toBeGreaterThan(0);
    const sent = upstream
      .deployment('east')
      .requests.concat(upstream.deployment('west').requests)
      .at(-1)!.body as OpenAI.ChatCompletionCreateParams;
    expect(sent.messages[0]).toEqual({ role: 'system', content: 'Be brief.' });
    expect(sent.max_completion_tokens).toBe(64);
  });

  it('messages.stream(...).finalMessage() with tool use, input streamed as input_json_delta', async () => {
    const stream = sb.messages.stream({
      model: CLAUDE,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Paris' }],
      tools: [
        {
          name: 'get_weather',
          input_schema: weather.function.parameters as Anthropic.Tool.InputSchema,
        },
      ],
      tool_choice: { type: 'tool', name: 'get_weather' },
    });
    let partial = 0;
    stream.on('inputJson', () => partial++);
    const final = await stream.finalMessage();
    expect(final.model).toBe(GPT);
    expect(final.stop_reason).toBe('tool_use');
    const block = final.content[0]!;
    expect(block.type).toBe('tool_use');
    expect(typeof (block as { input: { city: unknown } }).input.city).toBe('string');
    expect(partial).toBeGreaterThan(0);
    expect(final.usage.input_tokens).toBeGreaterThan(0);
  });

  it('through sb.fetch: an Anthropic client gets Anthropic-shaped answers from gpt-4o, streamed and not', async () => {
    const client = new Anthropic({
      apiKey: 'client',
      baseURL: 'https://client.example/anthropic',
      fetch: sb.fetch,
      maxRetries: 0,
    });
    const m = await client.messages.create({
      model: CLAUDE,
      max_tokens: 30,
      messages: [{ role: 'user', content: 'relayed' }],
    });
    expect(m.model).toBe(GPT);
    expect(m.content).toEqual([{ type: 'text', text: 'relayed', citations: null }]);
    const final = await client.messages
      .stream({
        model: CLAUDE,
        max_tokens: 200,
        messages: [{ role: 'user', content: 'Rome' }],
        tools: [
          {
            name: 'get_weather',
            input_schema: weather.function.parameters as Anthropic.Tool.InputSchema,
          },
        ],
        tool_choice: { type: 'any' },
      })
      .finalMessage();
    expect(final.model).toBe(GPT);
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content[0]!.type).toBe('tool_use');
  });

  it('a tool result turn goes back as a tool message', async () => {
    const m = await sb.messages.create({
      model: CLAUDE,
      max_tokens: 64,
      tools: [
        {
          name: 'get_weather',
          input_schema: weather.function.parameters as Anthropic.Tool.InputSchema,
        },
      ],
      messages: [
        { role: 'user', content: 'get_weather Paris' },
        {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
          ],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'sunny' }],
        },
      ],
    });
    expect(m.stop_reason).toBe('end_turn');
  });
});

describe('fallback across vendors through sb.fetch (what the gateway relays)', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard;
  let full: () => number;

  beforeAll(async () => {
    ({ upstream, sb, full } = await setup());
    for (let i = 0; i < 2; i++) {
      await sb.chat.completions.create({
        model: GPT,
        messages: [{ role: 'user', content: 'warm' }],
      });
    }
  });
  afterAll(async () => {
    await sb.close();
    await upstream.close();
  });
  afterEach(() => expect(full()).toBe(2));

  const client = () =>
    new OpenAI({
      apiKey: 'client',
      baseURL: 'https://client.example/v1',
      fetch: sb.fetch,
      maxRetries: 0,
    });

  it('an OpenAI client gets an OpenAI-shaped answer from Claude, streamed and not', async () => {
    const c = await client().chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'over fetch' }],
      tools: [weather],
      tool_choice: 'required',
    });
    expect(c.model).toBe(CLAUDE);
    expect(c.choices[0]!.finish_reason).toBe('tool_calls');
    const final = await client()
      .chat.completions.stream({
        model: GPT,
        messages: [{ role: 'user', content: 'streamed over fetch' }],
      })
      .finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe('streamed over fetch');
    expect(final.model).toBe(CLAUDE);
  });

  it('a call that cannot be translated gets the OpenAI 429 naming the field', async () => {
    const error = await client()
      .chat.completions.create({ model: GPT, n: 2, messages: [{ role: 'user', content: 'x' }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as Error).message).toContain("the call's n cannot be translated");
  });
});

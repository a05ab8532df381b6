import { Agent, request as httpRequest } from 'node:http';
import Anthropic, {
  APIConnectionError as AnthropicConnectionError,
  APIError as AnthropicAPIError,
  AuthenticationError as AnthropicAuthenticationError,
  BadRequestError as AnthropicBadRequestError,
  NotFoundError as AnthropicNotFoundError,
  RateLimitError as AnthropicRateLimitError,
} from '@anthropic-ai/sdk';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import AnthropicFoundry from '@anthropic-ai/foundry-sdk';
import OpenAI, {
  APIConnectionError,
  AuthenticationError,
  AzureOpenAI,
  BadRequestError,
  InternalServerError,
  NotFoundError,
  RateLimitError,
} from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';

import {
  SimulatedUpstream,
  startSimulatedUpstream,
  type SimulatedDeployment,
} from 'nestjs-switchboard/testing';

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-sonnet-5';

const openaiFor = (
  d: SimulatedDeployment,
  extra: Partial<ConstructorParameters<typeof OpenAI>[0]> = {},
) => new OpenAI({ baseURL: d.openaiBaseURL, apiKey: 'k', maxRetries: 0, ...extra });
const anthropicFor = (d: SimulatedDeployment, extra: Record<string, unknown> = {}) =>
  new Anthropic({ baseURL: d.anthropicBaseURL, apiKey: 'k', maxRetries: 0, ...extra });
const foundryFor = (d: SimulatedDeployment, extra: Record<string, unknown> = {}) =>
  new AnthropicFoundry({ baseURL: d.anthropicBaseURL, apiKey: 'k', maxRetries: 0, ...extra });

const chat = (content: string, extra: Record<string, unknown> = {}) => ({
  model: GPT,
  messages: [{ role: 'user' as const, content }],
  ...extra,
});
const message = (content: string, extra: Record<string, unknown> = {}) => ({
  model: CLAUDE,
  max_tokens: 256,
  messages: [{ role: 'user' as const, content }],
  ...extra,
});

/** Runs `fn` and returns what it threw. */
async function thrown(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('SimulatedUpstream', () => {
  let upstream: SimulatedUpstream;
  let now = 1_000_000;

  beforeAll(async () => {
    upstream = await startSimulatedUpstream({
      deployments: [
        { name: 'a' },
        { name: 'b' },
        { name: 'slow', chunkDelay: 1 },
        { name: 'locked', apiKey: 'secret' },
        // The friendly quota model; the faithful default has its own suite (faithful-quota.spec).
        { name: 'rpm', rpm: 12, timeScale: 60, quota: 'friendly' },
        { name: 'tpm', tpm: 100, timeScale: 60, quota: 'friendly' },
        { name: 'fixed', completionTokens: 42 },
      ],
      clock: () => now,
      // Bursts of fetch() calls reuse pooled sockets: on a busy machine a pause between two
      // bursts can reach Node's 5 s idle timeout and race the server's close (ECONNRESET).
      keepAliveTimeout: 60_000,
    });
  });
  afterEach(() => upstream.reset());
  afterAll(() => upstream.close());

  describe('layout', () => {
    it('exposes URLs per deployment and throws for unknown names', () => {
      const a = upstream.deployment('a');
      expect(upstream.url).toBe(`http://127.0.0.1:${upstream.port}`);
      expect(a.openaiBaseURL).toBe(`${upstream.url}/a/openai/v1/`);
      expect(a.anthropicBaseURL).toBe(`${upstream.url}/a/anthropic/`);
      expect(upstream.deployments.map((d) => d.name)).toEqual([
        'a',
        'b',
        'slow',
        'locked',
        'rpm',
        'tpm',
        'fixed',
      ]);
      expect(() => upstream.deployment('nope')).toThrow(/Unknown simulated deployment 'nope'/);
      expect(a.openaiClientOptions()).toEqual({
        baseURL: a.openaiBaseURL,
        apiKey: 'simulated',
        maxRetries: 0,
      });
    });

    it('rejects invalid and duplicate names', async () => {
      await expect(
        SimulatedUpstream.start({ deployments: [{ name: 'x' }, { name: 'x' }] }),
      ).rejects.toThrow(/deployments\[1\]\.name duplicates the name 'x'/);
      await expect(SimulatedUpstream.start({ deployments: [{ name: 'a/b' }] })).rejects.toThrow(
        /deployments\[0\]\.name must use letters, digits/,
      );
    });
  });

  describe('OpenAI chat completions', () => {
    it('echoes the last user message with usage, ids and headers', async () => {
      const a = upstream.deployment('a');
      const openai = openaiFor(a);
      const { data, response } = await openai.chat.completions
        .create(
          {
            model: GPT,
            messages: [
              { role: 'system', content: 'Be brief.' },
              { role: 'user', content: 'first' },
              { role: 'assistant', content: 'ok' },
              { role: 'user', content: 'Hello there, simulated world' },
            ],
          },
          { headers: { 'x-request-echo': 'trace-1' } },
        )
        .withResponse();
      expect(data.object).toBe('chat.completion');
      expect(data.id).toMatch(/^chatcmpl-a-\d+$/);
      expect(data.model).toBe(GPT);
      expect(data.choices).toHaveLength(1);
      expect(data.choices[0]!.message).toMatchObject({
        role: 'assistant',
        content: 'Hello there, simulated world',
      });
      expect(data.choices[0]!.finish_reason).toBe('stop');
      // 9 + 5 + 2 + 28 = 44 chars -> 11 tokens; 28 chars -> 7 tokens
      expect(data.usage).toMatchObject({
        prompt_tokens: 11,
        completion_tokens: 7,
        total_tokens: 18,
      });
      expect(response.headers.get('x-simulated-deployment')).toBe('a');
      expect(response.headers.get('x-request-echo')).toBe('trace-1');

      const second = await openai.chat.completions.create(chat('again'));
      expect(second.id).toMatch(/^chatcmpl-a-\d+$/);
      expect(second.id).not.toBe(data.id);

      expect(a.stats).toMatchObject({
        requests: 2,
        ok: 2,
        failed: 0,
        rateLimited: 0,
        promptTokens: 11 + 2,
        completionTokens: 7 + 2,
        totalTokens: 18 + 4,
        inFlight: 0,
      });
      expect(a.stats.byStatus).toEqual({ 200: 2 });
      const record = a.requests[0]!;
      expect(record).toMatchObject({ api: 'chat', model: GPT, stream: false, at: now });
      expect(record.headers['authorization']).toBe('Bearer k');
      expect(record.headers['x-request-echo']).toBe('trace-1');
      expect((record.body as { messages: unknown[] }).messages).toHaveLength(4);
    });

    it('echoes array content parts and honours completionTokens and max_tokens', async () => {
      const fixed = openaiFor(upstream.deployment('fixed'));
      const completion = await fixed.chat.completions.create({
        model: GPT,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Hello ' },
              { type: 'image_url', image_url: { url: 'https://example.com/x.png' } },
              { type: 'text', text: 'parts' },
            ],
          },
        ],
      });
      expect(completion.choices[0]!.message.content).toBe('Hello parts');
      expect(completion.usage!.completion_tokens).toBe(42);

      const truncated = await openaiFor(upstream.deployment('a')).chat.completions.create(
        chat('one two three four five six seven eight nine ten', { max_completion_tokens: 2 }),
      );
      expect(truncated.choices[0]!.finish_reason).toBe('length');
      expect(truncated.choices[0]!.message.content).toBe('one two ');
      expect(truncated.usage!.completion_tokens).toBe(2);
    });

    it('streams chunks, with a usage chunk only when include_usage is set', async () => {
      const openai = openaiFor(upstream.deployment('slow'));
      const text = 'The quick brown fox jumps over the lazy dog';
      const chunks = [];
      for await (const chunk of await openai.chat.completions.create({
        ...chat(text),
        stream: true as const,
        stream_options: { include_usage: true },
      })) {
        chunks.push(chunk);
      }
      expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
      expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
      expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
      const deltas = chunks.flatMap((c) => c.choices.map((choice) => choice.delta.content ?? ''));
      expect(deltas.filter((d) => d !== '').length).toBeGreaterThan(3);
      expect(deltas.join('')).toBe(text);
      const withFinish = chunks.filter((c) => c.choices[0]?.finish_reason);
      expect(withFinish).toHaveLength(1);
      expect(withFinish[0]!.choices[0]!.finish_reason).toBe('stop');
      const last = chunks.at(-1)!;
      expect(last.choices).toEqual([]);
      expect(last.usage).toMatchObject({
        prompt_tokens: 11,
        completion_tokens: 11,
        total_tokens: 22,
      });

      const plain = [];
      for await (const chunk of await openai.chat.completions.create({
        ...chat(text),
        stream: true as const,
      })) {
        plain.push(chunk);
      }
      expect(plain.some((c) => c.usage)).toBe(false);
      expect(plain.at(-1)!.choices[0]!.finish_reason).toBe('stop');
      expect(upstream.deployment('slow').stats).toMatchObject({ ok: 2, promptTokens: 22 });
    });

    it('accumulates a stream with the chat.completions.stream helper', async () => {
      const openai = openaiFor(upstream.deployment('a'));
      const stream = openai.chat.completions.stream(chat('streamed helper text'));
      const final = await stream.finalChatCompletion();
      expect(final.choices[0]!.message.content).toBe('streamed helper text');
    });

    it('answers json_schema response formats so that parse() succeeds', async () => {
      const Step = z.object({ explanation: z.string(), output: z.string() });
      const Answer = z.object({
        steps: z.array(Step).min(2),
        final_answer: z.string().min(10),
        confidence: z.number().min(0.5).max(1),
        attempts: z.number().int().positive(),
        verdict: z.enum(['correct', 'wrong']),
        tag: z.literal('math'),
        note: z.string().nullable(),
        contact: z.email(),
        id: z.uuid(),
        when: z.iso.datetime(),
        code: z.string().regex(/^[A-Z]{3}-\d{2}$/),
        flags: z.array(z.boolean()),
        shape: z.discriminatedUnion('kind', [
          z.object({ kind: z.literal('circle'), radius: z.number() }),
          z.object({ kind: z.literal('square'), side: z.number() }),
        ]),
        maybe: z.union([z.string(), z.number()]).nullable(),
      });
      const openai = openaiFor(upstream.deployment('a'));
      const completion = await openai.chat.completions.parse({
        model: GPT,
        messages: [{ role: 'user', content: 'solve 8x + 31 = 2' }],
        response_format: zodResponseFormat(Answer, 'answer'),
      });
      const parsed = completion.choices[0]!.message.parsed!;
      expect(Answer.parse(parsed)).toEqual(parsed);
      expect(parsed.steps).toHaveLength(2);
      expect(parsed.verdict).toBe('correct');
      expect(parsed.code).toMatch(/^[A-Z]{3}-\d{2}$/);
    });

    it('answers recursive schemas', async () => {
      interface Tree {
        name: string;
        children: Tree[];
      }
      const TreeSchema: z.ZodType<Tree> = z.object({
        name: z.string(),
        get children() {
          return z.array(TreeSchema);
        },
      });
      const openai = openaiFor(upstream.deployment('a'));
      const completion = await openai.chat.completions.parse({
        model: GPT,
        messages: [{ role: 'user', content: 'tree' }],
        response_format: zodResponseFormat(z.object({ root: TreeSchema }), 'tree'),
      });
      expect(completion.choices[0]!.message.parsed!.root.name).toBe('string');
    });

    it('serves the Azure OpenAI deployments route and accepts the api-key header', async () => {
      const locked = upstream.deployment('locked');
      const azure = new AzureOpenAI({
        endpoint: locked.azureEndpoint,
        apiKey: 'secret',
        apiVersion: '2024-10-21',
        deployment: 'my-gpt',
        maxRetries: 0,
      });
      const completion = await azure.chat.completions.create(chat('via azure'));
      expect(completion.choices[0]!.message.content).toBe('via azure');
      expect(locked.requests.at(-1)!.headers['api-key']).toBe('secret');
    });
  });

  describe('Anthropic messages', () => {
    it('answers a Message with usage', async () => {
      const a = upstream.deployment('a');
      const { data, response } = await anthropicFor(a)
        .messages.create({
          model: CLAUDE,
          max_tokens: 100,
          system: 'You are terse.',
          messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi Claude, echo me' }] }],
        })
        .withResponse();
      expect(data.id).toMatch(/^msg_a_\d+$/);
      expect(data).toMatchObject({
        type: 'message',
        role: 'assistant',
        model: CLAUDE,
        content: [{ type: 'text', text: 'Hi Claude, echo me' }],
        stop_reason: 'end_turn',
        stop_sequence: null,
      });
      // 14 + 18 = 32 chars -> 8 tokens; 18 chars -> 5 tokens
      expect(data.usage).toMatchObject({ input_tokens: 8, output_tokens: 5 });
      expect(response.headers.get('x-simulated-deployment')).toBe('a');
      expect(response.headers.get('request-id')).toMatch(/^req_a_\d+$/);
      expect(a.requests[0]).toMatchObject({ api: 'messages', model: CLAUDE, stream: false });
      // @anthropic-ai/sdk 1.x sends the API key as a bearer token (Foundry sends x-api-key)
      expect(a.requests[0]!.headers['authorization']).toBe('Bearer k');
      expect(a.stats).toMatchObject({ ok: 1, promptTokens: 8, completionTokens: 5 });
    });

    it('streams the real event sequence', async () => {
      const anthropic = anthropicFor(upstream.deployment('slow'));
      const text = 'Streaming from a simulated Claude deployment';
      const events = [];
      for await (const event of await anthropic.messages.create({
        ...message(text),
        stream: true as const,
      })) {
        events.push(event);
      }
      const types = events.map((e) => e.type);
      expect(types[0]).toBe('message_start');
      expect(types[1]).toBe('content_block_start');
      expect(types.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
      const deltas = events.filter((e) => e.type === 'content_block_delta');
      expect(deltas.length).toBeGreaterThan(3);
      expect(
        deltas
          .map((e) =>
            e.type === 'content_block_delta' && e.delta.type === 'text_delta' ? e.delta.text : '',
          )
          .join(''),
      ).toBe(text);
      const start = events[0]!;
      expect(start.type === 'message_start' && start.message.usage).toMatchObject({
        input_tokens: 11,
        output_tokens: 1,
      });
      const messageDeltas = events.filter((e) => e.type === 'message_delta');
      expect(messageDeltas).toHaveLength(1);
      expect(messageDeltas[0]).toMatchObject({
        delta: { stop_reason: 'end_turn' },
        usage: { output_tokens: 11 },
      });
    });

    it('accumulates with messages.stream() on Foundry', async () => {
      const b = upstream.deployment('b');
      const foundry = foundryFor(b);
      const final = await foundry.messages
        .stream(message('foundry streaming works'))
        .finalMessage();
      expect(final.content).toEqual([{ type: 'text', text: 'foundry streaming works' }]);
      expect(final.usage.output_tokens).toBe(6);
      expect(final.stop_reason).toBe('end_turn');
      const plain = await foundry.messages.create(message('foundry plain'));
      expect(plain.content[0]).toMatchObject({ type: 'text', text: 'foundry plain' });
      expect(b.requests.map((r) => r.headers['x-api-key'])).toEqual(['k', 'k']);
      expect(b.stats.ok).toBe(2);
    });

    it('answers output_config json_schema formats so that parse() succeeds', async () => {
      const Schema = z.object({
        answer: z.number().min(10).max(20),
        title: z.string().min(12).max(40),
        items: z.array(z.object({ sku: z.string().regex(/^SKU-\d{4}$/), qty: z.number().int() })),
        status: z.enum(['open', 'closed']),
        extra: z.string().optional(),
        nested: z.object({ flag: z.boolean(), note: z.string().nullable() }),
      });
      for (const client of [
        anthropicFor(upstream.deployment('a')),
        foundryFor(upstream.deployment('b')),
      ]) {
        const result = await client.messages.parse({
          model: CLAUDE,
          max_tokens: 1024,
          messages: [{ role: 'user', content: 'give me json' }],
          output_config: { format: zodOutputFormat(Schema) },
        });
        expect(Schema.parse(result.parsed_output)).toEqual(result.parsed_output);
        expect(result.parsed_output!.answer).toBeGreaterThanOrEqual(10);
      }
      const sent = upstream.deployment('a').requests.at(-1)!.body as {
        output_config: { format: { type: string; schema: unknown } };
      };
      expect(sent.output_config.format.type).toBe('json_schema');
    });

    it('cuts answers at max_tokens', async () => {
      const result = await anthropicFor(upstream.deployment('a')).messages.create(
        message('one two three four five six seven eight', { max_tokens: 1 }),
      );
      expect(result.stop_reason).toBe('max_tokens');
      expect(result.usage.output_tokens).toBe(1);
      expect(result.content[0]).toMatchObject({ text: 'one ' });
    });
  });

  describe('faults', () => {
    it('plays 429 with retry-after headers in both shapes', async () => {
      const a = upstream.deployment('a');
      a.fail(
        { kind: 'status', status: 429, retryAfter: 2, retryAfterMs: 1500, message: 'slow down' },
        2,
      );
      const err = await thrown(() => openaiFor(a).chat.completions.create(chat('x')));
      expect(err).toBeInstanceOf(RateLimitError);
      const rateLimited = err as RateLimitError;
      expect(rateLimited.status).toBe(429);
      expect(rateLimited.headers.get('retry-after-ms')).toBe('1500');
      expect(rateLimited.headers.get('retry-after')).toBe('2');
      expect(rateLimited.headers.get('x-simulated-deployment')).toBe('a');
      expect(rateLimited.error).toMatchObject({
        message: 'slow down',
        code: 'rate_limit_exceeded',
      });

      const aErr = await thrown(() => anthropicFor(a).messages.create(message('x')));
      expect(aErr).toBeInstanceOf(AnthropicRateLimitError);
      expect((aErr as AnthropicRateLimitError).headers?.get('retry-after-ms')).toBe('1500');
      expect((aErr as AnthropicRateLimitError).error).toMatchObject({
        type: 'error',
        error: { type: 'rate_limit_error', message: 'slow down' },
      });
      expect(a.stats).toMatchObject({ requests: 2, rateLimited: 2, failed: 0, ok: 0 });
      expect(a.stats.byStatus).toEqual({ 429: 2 });
      expect(a.pendingFaults).toBe(0);
      await expect(openaiFor(a).chat.completions.create(chat('ok now'))).resolves.toBeDefined();
    });

    it('plays 500 and 529', async () => {
      const a = upstream.deployment('a');
      a.fail({ kind: 'status', status: 500 }).fail({ kind: 'status', status: 529 });
      const err = await thrown(() => openaiFor(a).chat.completions.create(chat('x')));
      expect(err).toBeInstanceOf(InternalServerError);
      expect((err as InternalServerError).error).toMatchObject({ type: 'server_error' });
      const overloaded = await thrown(() => foundryFor(a).messages.create(message('x')));
      expect(overloaded).toBeInstanceOf(AnthropicAPIError);
      expect((overloaded as AnthropicAPIError).status).toBe(529);
      expect((overloaded as AnthropicAPIError).error).toMatchObject({
        error: { type: 'overloaded_error' },
      });
      expect(a.stats).toMatchObject({ failed: 2, byStatus: { 500: 1, 529: 1 } });
    });

    it('plays faults in FIFO order, repeats Infinity ones until cleared', async () => {
      const a = upstream.deployment('a');
      const openai = openaiFor(a);
      a.fail({ kind: 'status', status: 503 }).fail({ kind: 'status', status: 502 }, Infinity);
      expect(a.pendingFaults).toBe(Infinity);
      const statuses = [];
      for (let i = 0; i < 3; i++) {
        statuses.push(
          ((await thrown(() => openai.chat.completions.create(chat('x')))) as InternalServerError)
            .status,
        );
      }
      expect(statuses).toEqual([503, 502, 502]);
      a.clearFaults();
      await expect(openai.chat.completions.create(chat('x'))).resolves.toBeDefined();
    });

    it('resets the connection', async () => {
      const a = upstream.deployment('a');
      a.fail({ kind: 'reset' }, 2);
      await expect(openaiFor(a).chat.completions.create(chat('x'))).rejects.toBeInstanceOf(
        APIConnectionError,
      );
      await expect(anthropicFor(a).messages.create(message('x'))).rejects.toBeInstanceOf(
        AnthropicConnectionError,
      );
      expect(a.stats).toMatchObject({ requests: 2, failed: 2, inFlight: 0 });
      expect(a.stats.byStatus).toEqual({});
    });

    it('hangs until the client times out', async () => {
      const a = upstream.deployment('a');
      a.fail({ kind: 'hang' });
      // Long enough for the request to arrive on a busy machine before the client gives up (a
      // request on loopback takes milliseconds; the reliability specs hang on 400-500 ms too).
      const err = await thrown(() =>
        openaiFor(a, { timeout: 500 }).chat.completions.create(chat('x')),
      );
      // Under jest the SDK sees undici's AbortError from another realm (castToError wraps it), so
      // it reports APIConnectionError; in plain Node this is an APIConnectionTimeoutError.
      expect(err).toBeInstanceOf(APIConnectionError);
      await a.whenIdle();
      expect(a.stats).toMatchObject({ requests: 1, failed: 1, aborted: 1, inFlight: 0 });
    });

    it('drops a stream mid-way: the error surfaces while iterating', async () => {
      const a = upstream.deployment('a');
      a.fail({ kind: 'drop-mid-stream', afterEvents: 3 });
      const received: string[] = [];
      const err = await thrown(async () => {
        const stream = await openaiFor(a).chat.completions.create({
          ...chat('several words in this answer'),
          stream: true as const,
        });
        for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? '');
      });
      expect(String(err)).toMatch(/terminated|closed|socket/i);
      expect(received).toEqual(['', 'several ', 'words ']);

      a.fail({ kind: 'drop-mid-stream' });
      const events: string[] = [];
      const aErr = await thrown(async () => {
        const stream = await anthropicFor(a).messages.create({
          ...message('a b c d'),
          stream: true as const,
        });
        for await (const event of stream) events.push(event.type);
      });
      expect(String(aErr)).toMatch(/terminated|closed|socket/i);
      expect(events).toEqual(['message_start', 'content_block_start']);
      expect(a.stats).toMatchObject({ failed: 2, ok: 0, byStatus: { 200: 2 } });
    });

    it('drops a non-streamed body mid-way', async () => {
      const a = upstream.deployment('a');
      a.fail({ kind: 'drop-mid-stream' }, 2);
      await expect(openaiFor(a).chat.completions.create(chat('x'))).rejects.toThrow();
      await expect(anthropicFor(a).messages.create(message('x'))).rejects.toThrow();
      expect(a.stats.failed).toBe(2);
    });

    it('sends malformed JSON bodies and SSE lines', async () => {
      const a = upstream.deployment('a');
      const silent = {
        error: () => undefined,
        warn: () => undefined,
        info: () => undefined,
        debug: () => undefined,
      };
      a.fail({ kind: 'malformed' }, 4);
      await expect(openaiFor(a).chat.completions.create(chat('x'))).rejects.toThrow(/JSON/);
      await expect(anthropicFor(a).messages.create(message('x'))).rejects.toThrow(/JSON/);
      const chunks: unknown[] = [];
      await expect(
        (async () => {
          const stream = await openaiFor(a, { logger: silent }).chat.completions.create({
            ...chat('x y z'),
            stream: true as const,
          });
          for await (const chunk of stream) chunks.push(chunk);
        })(),
      ).rejects.toThrow(/JSON/);
      expect(chunks).toHaveLength(1);
      await expect(
        (async () => {
          const stream = await anthropicFor(a, { logger: silent }).messages.create({
            ...message('x y z'),
            stream: true as const,
          });
          for await (const _event of stream) {
            // consume
          }
        })(),
      ).rejects.toThrow(/JSON/);
      expect(a.stats).toMatchObject({ failed: 4, byStatus: { 200: 4 } });
    });

    it('waits latency before answering and chunkDelay between events', async () => {
      const a = upstream.deployment('a');
      a.latency = 60;
      // The simulator's own timers are faked; the client's (in Node's realm) and I/O are not.
      jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
      try {
        let answered = false;
        const call = openaiFor(a)
          .chat.completions.create(chat('x'))
          .then(() => (answered = true));
        await a.waitFor((d) => d.stats.inFlight === 1);
        await jest.advanceTimersByTimeAsync(59);
        expect(answered).toBe(false);
        expect(a.stats.ok).toBe(0);
        await jest.advanceTimersByTimeAsync(1);
        await call;
        expect(a.stats.ok).toBe(1);
      } finally {
        jest.useRealTimers();
        a.latency = 0;
      }
    });
  });

  describe("quota: 'friendly'", () => {
    it('enforces rpm / 6 per 10 s window, scaled by timeScale', async () => {
      // rpm 12 -> 2 requests per 10 s window; timeScale 60 -> the window lasts 166.67 ms
      const d = upstream.deployment('rpm');
      const openai = openaiFor(d);
      await openai.chat.completions.create(chat('1'));
      now += 100;
      await openai.chat.completions.create(chat('2'));
      now += 10;
      const err = (await thrown(() => openai.chat.completions.create(chat('3')))) as RateLimitError;
      expect(err).toBeInstanceOf(RateLimitError);
      expect(err.headers.get('retry-after-ms')).toBe('57'); // 166.67 - 110
      expect(err.headers.get('retry-after')).toBe('1');
      expect(err.headers.get('x-ratelimit-remaining-requests')).toBe('0');
      expect(err.error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded' });
      const aErr = await thrown(() => anthropicFor(d).messages.create(message('3')));
      expect(aErr).toBeInstanceOf(AnthropicRateLimitError);
      now += 57;
      const { response } = await openai.chat.completions.create(chat('4')).withResponse();
      expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('1');
      expect(d.stats).toMatchObject({ ok: 3, rateLimited: 2 });
    });

    it('enforces tpm per 60 s window, charging prompt + completion at admission', async () => {
      // tpm 100; timeScale 60 -> the window lasts 1 s
      const d = upstream.deployment('tpm');
      const openai = openaiFor(d);
      const forty = 'x'.repeat(80); // 20 prompt + 20 completion tokens
      await openai.chat.completions.create(chat(forty));
      await openai.chat.completions.create(chat(forty));
      now += 400;
      const err = (await thrown(() =>
        openai.chat.completions.create(chat(forty)),
      )) as RateLimitError;
      expect(err).toBeInstanceOf(RateLimitError);
      expect(err.headers.get('retry-after-ms')).toBe('600');
      expect(err.headers.get('retry-after')).toBe('1');
      expect(err.headers.get('x-ratelimit-remaining-tokens')).toBe('20');
      expect(err.error).toMatchObject({ type: 'tokens' });
      // a smaller request still fits
      await openai.chat.completions.create(chat('x'.repeat(40)));
      now += 600;
      await openai.chat.completions.create(chat(forty));
      expect(d.stats).toMatchObject({ ok: 4, rateLimited: 1 });
    });

    it('charges max_tokens with chargeMaxTokens', async () => {
      const d = upstream.deployment('tpm');
      d.chargeMaxTokens = true;
      try {
        const anthropic = anthropicFor(d);
        await anthropic.messages.create(message('hi', { max_tokens: 60 })); // 1 + 60
        const err = await thrown(() =>
          anthropic.messages.create(message('hi', { max_tokens: 60 })),
        );
        expect(err).toBeInstanceOf(AnthropicRateLimitError);
        expect((err as AnthropicRateLimitError).headers?.get('x-ratelimit-remaining-tokens')).toBe(
          '39',
        );
      } finally {
        d.chargeMaxTokens = false;
      }
    });
  });

  describe('auth and errors', () => {
    it('requires the API key when set', async () => {
      const locked = upstream.deployment('locked');
      await expect(openaiFor(locked).chat.completions.create(chat('x'))).rejects.toBeInstanceOf(
        AuthenticationError,
      );
      const err = await thrown(() => anthropicFor(locked).messages.create(message('x')));
      expect(err).toBeInstanceOf(AnthropicAuthenticationError);
      expect((err as AnthropicAuthenticationError).error).toMatchObject({
        type: 'error',
        error: { type: 'authentication_error' },
      });
      await expect(
        openaiFor(locked, { apiKey: 'secret' }).chat.completions.create(chat('x')),
      ).resolves.toBeDefined();
      await expect(
        foundryFor(locked, { apiKey: 'secret' }).messages.create(message('x')),
      ).resolves.toBeDefined();
      expect(locked.stats).toMatchObject({ ok: 2, failed: 2, byStatus: { 401: 2, 200: 2 } });
    });

    it('answers 404 for unknown deployments and paths', async () => {
      const ghost = {
        openaiBaseURL: `${upstream.url}/ghost/openai/v1/`,
        anthropicBaseURL: `${upstream.url}/ghost/anthropic/`,
      } as SimulatedDeployment;
      await expect(openaiFor(ghost).chat.completions.create(chat('x'))).rejects.toBeInstanceOf(
        NotFoundError,
      );
      const err = await thrown(() => anthropicFor(ghost).messages.create(message('x')));
      expect(err).toBeInstanceOf(AnthropicNotFoundError);
      expect((err as AnthropicNotFoundError).error).toMatchObject({
        error: { type: 'not_found_error' },
      });

      const a = upstream.deployment('a');
      const res = await fetch(`${a.openaiBaseURL}audio/speech`, {
        method: 'POST',
        body: '{}',
        headers: { 'x-request-echo': 'e' },
      });
      expect(res.status).toBe(404);
      expect(res.headers.get('x-simulated-deployment')).toBe('a');
      expect(res.headers.get('x-request-echo')).toBe('e');
      expect(await res.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
      expect(a.stats).toMatchObject({ requests: 1, failed: 1, byStatus: { 404: 1 } });
      expect(a.requests).toHaveLength(0);
    });

    it('answers 400 for invalid bodies', async () => {
      const a = upstream.deployment('a');
      await expect(
        anthropicFor(a).messages.create({
          model: CLAUDE,
          messages: [{ role: 'user', content: 'x' }],
        } as any),
      ).rejects.toBeInstanceOf(AnthropicBadRequestError);
      const err = await thrown(() => openaiFor(a).chat.completions.create({ model: GPT } as any));
      expect(err).toBeInstanceOf(BadRequestError);
      expect((err as BadRequestError).error).toMatchObject({ param: 'messages' });
      const res = await fetch(`${a.openaiBaseURL}chat/completions`, {
        method: 'POST',
        body: '{oops',
      });
      expect(res.status).toBe(400);
      expect(a.requests.at(-1)!.body).toBe('{oops');
      const noModel = await fetch(`${a.anthropicBaseURL}v1/messages`, {
        method: 'POST',
        body: JSON.stringify({ max_tokens: 1, messages: [] }),
      });
      expect(noModel.status).toBe(400);
      expect(await noModel.json()).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'model: Field required' },
        request_id: expect.any(String),
      });
    });

    it('keeps only the last 1000 request records', async () => {
      const a = upstream.deployment('a');
      a.fail({ kind: 'status', status: 500 }, Infinity);
      // Plain HTTP on kept-alive sockets: the records are the subject, and a thousand fetch()
      // calls cost several times the client work.
      const agent = new Agent({ keepAlive: true, maxSockets: 50 });
      const url = new URL(`${a.openaiBaseURL}chat/completions`);
      const send = (i: number) =>
        new Promise<void>((resolve, reject) => {
          const req = httpRequest(url, { method: 'POST', agent }, (res) => {
            res.on('error', reject).on('end', resolve).resume();
          });
          req.on('error', reject).end(JSON.stringify(chat(`m${i}`)));
        });
      try {
        for (let batch = 0; batch < 21; batch++) {
          await Promise.all(Array.from({ length: 50 }, (_, i) => send(batch * 50 + i)));
        }
      } finally {
        agent.destroy();
      }
      expect(a.stats.requests).toBe(1050);
      expect(a.requests).toHaveLength(1000);
    });
  });
});

describe('SimulatedUpstream.close', () => {
  it('resolves with hanging requests, fails them, and is idempotent', async () => {
    const upstream = await SimulatedUpstream.start({ deployments: [{ name: 'h' }] });
    const h = upstream.deployment('h');
    h.fail({ kind: 'hang' }, Infinity);
    const pending = thrown(() => openaiFor(h).chat.completions.create(chat('x')));
    const pendingStream = thrown(() =>
      anthropicFor(h).messages.create({ ...message('x'), stream: true as const }),
    );
    await h.waitFor((d) => d.stats.inFlight === 2 && d.requests.length === 2);
    const idle = h.whenIdle();
    await Promise.all([upstream.close(), upstream.close()]);
    await idle;
    expect(await pending).toBeInstanceOf(APIConnectionError);
    expect(await pendingStream).toBeInstanceOf(AnthropicConnectionError);
    expect(h.stats).toMatchObject({ inFlight: 0, failed: 2, aborted: 2 });
    await upstream.close();
    await expect(h.waitFor((d) => d.stats.ok > 0)).rejects.toThrow(/closed/);
  });
});

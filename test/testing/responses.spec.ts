import OpenAI, { AzureOpenAI, BadRequestError, NotFoundError } from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { z } from 'zod';

import { startSimulatedUpstream, type SimulatedUpstream } from 'nestjs-switchboard/testing';

const GPT = 'gpt-4o-mini';

describe('simulated Responses API', () => {
  let upstream: SimulatedUpstream;
  const now = 5_000_000;
  const openai = (name: string): OpenAI =>
    new OpenAI({ ...upstream.deployment(name).openaiClientOptions(), apiKey: 'k' });

  beforeAll(async () => {
    upstream = await startSimulatedUpstream({
      deployments: [{ name: 'a' }, { name: 'b' }, { name: 'fixed', completionTokens: 40 }],
      clock: () => now,
    });
  });
  afterEach(() => {
    upstream.reset();
    for (const d of upstream.deployments) d.forgetResponses();
  });
  afterAll(() => upstream.close());

  it('answers create() with a Response echoing the input, usage and output_text', async () => {
    const response = await openai('a').responses.create({
      model: GPT,
      instructions: 'Be brief.',
      input: 'Hello there world',
      metadata: { k: 'v' },
    });
    expect(response).toMatchObject({
      object: 'response',
      status: 'completed',
      model: GPT,
      instructions: 'Be brief.',
      previous_response_id: null,
      metadata: { k: 'v' },
      output: [
        {
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Hello there world' }],
        },
      ],
      // prompt: ceil((9 + 17) / 4) = 7, output: ceil(17 / 4) = 5
      usage: { input_tokens: 7, output_tokens: 5, total_tokens: 12 },
    });
    expect(response.id).toMatch(/^resp_a_/);
    expect(response.created_at).toBe(Math.floor(now / 1000));
    expect(response.output_text).toBe('Hello there world');
    const record = upstream.deployment('a').requests.at(-1);
    expect(record).toMatchObject({ api: 'responses', model: GPT, stream: false });
  });

  it('takes the last user message of an input array and cuts at max_output_tokens', async () => {
    const long = 'word '.repeat(40).trim();
    const response = await openai('a').responses.create({
      model: GPT,
      input: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: [{ type: 'input_text', text: long }] },
      ],
      max_output_tokens: 16,
    });
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(response.usage?.output_tokens).toBe(16);
    expect(response.output_text).toBe(long.slice(0, 64));
    await expect(
      openai('a').responses.create({ model: GPT, input: 'x', max_output_tokens: 8 }),
    ).rejects.toBeInstanceOf(BadRequestError);
  });

  it('streams the event sequence of stream: true', async () => {
    const stream = await openai('fixed').responses.create({
      model: GPT,
      input: 'one two three',
      stream: true,
    });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const types = events.map((event) => event.type);
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((event) => event.sequence_number)).toEqual(types.map((_, i) => i));
    const deltas = events.flatMap((e) =>
      e.type === 'response.output_text.delta' ? [e.delta] : [],
    );
    expect(deltas.join('')).toBe('one two three');
    const last = events.at(-1);
    expect(last?.type === 'response.completed' && last.response.usage).toMatchObject({
      input_tokens: 4,
      output_tokens: 40,
    });
  });

  it('accumulates with responses.stream() and finalResponse()', async () => {
    const stream = openai('a').responses.stream({ model: GPT, input: 'streamed answer' });
    let text = '';
    stream.on('response.output_text.delta', (event) => (text += event.delta));
    const final = await stream.finalResponse();
    expect(text).toBe('streamed answer');
    expect(final.status).toBe('completed');
    // ResponseStream's final response carries the output items (the SDK adds `output_text`
    // only to non-streamed answers).
    expect(final.output).toMatchObject([{ content: [{ text: 'streamed answer' }] }]);
    expect(final.usage?.output_tokens).toBe(4);
  });

  it('answers text.format json_schema so that parse() with zodTextFormat succeeds', async () => {
    const Person = z.object({ name: z.string(), age: z.number().int(), tags: z.array(z.string()) });
    const response = await openai('a').responses.parse({
      model: GPT,
      input: 'who?',
      text: { format: zodTextFormat(Person, 'person') },
    });
    expect(Person.safeParse(response.output_parsed).success).toBe(true);
    expect(response.text?.format).toMatchObject({ type: 'json_schema', name: 'person' });
  });

  it('stores responses per deployment: retrieve, chain, delete, 404 elsewhere', async () => {
    const first = await openai('a').responses.create({ model: GPT, input: 'remember this' });
    expect(upstream.deployment('a').storedResponseIds).toEqual([first.id]);
    const retrieved = await openai('a').responses.retrieve(first.id);
    expect(retrieved.id).toBe(first.id);
    expect(retrieved.output_text).toBe('remember this');

    const second = await openai('a').responses.create({
      model: GPT,
      input: 'and this',
      previous_response_id: first.id,
    });
    expect(second.previous_response_id).toBe(first.id);
    // The chain carries the first response's input and output as context.
    const firstUsage = first.usage!;
    expect(second.usage?.input_tokens).toBe(2 + firstUsage.input_tokens + firstUsage.output_tokens);

    const elsewhere = openai('b').responses.create({
      model: GPT,
      input: 'x',
      previous_response_id: first.id,
    });
    await expect(elsewhere).rejects.toBeInstanceOf(NotFoundError);
    await expect(elsewhere).rejects.toMatchObject({
      status: 404,
      param: 'previous_response_id',
      code: 'previous_response_not_found',
    });
    await expect(openai('b').responses.retrieve(first.id)).rejects.toBeInstanceOf(NotFoundError);
    expect(upstream.deployment('b').stats.byStatus[404]).toBe(2);

    await openai('a').responses.delete(first.id);
    await expect(openai('a').responses.retrieve(first.id)).rejects.toBeInstanceOf(NotFoundError);

    const unstored = await openai('a').responses.create({ model: GPT, input: 'x', store: false });
    expect(upstream.deployment('a').storedResponseIds).not.toContain(unstored.id);
    await expect(openai('a').responses.retrieve(unstored.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('serves AzureOpenAI clients on /openai/responses', async () => {
    const a = upstream.deployment('a');
    const azure = new AzureOpenAI({
      endpoint: a.azureEndpoint,
      apiKey: 'k',
      apiVersion: 'preview',
      maxRetries: 0,
    });
    const response = await azure.responses.create({ model: GPT, input: 'azure' });
    expect(response.output_text).toBe('azure');
    expect(a.requests.at(-1)?.headers['api-key']).toBe('k');
  });

  it('plays faults on streamed responses', async () => {
    upstream.deployment('a').fail({ kind: 'drop-mid-stream', afterEvents: 3 });
    const stream = await openai('a').responses.create({
      model: GPT,
      input: 'a b c d',
      stream: true,
    });
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const event of stream) seen.push(event.type);
      })(),
    ).rejects.toThrow();
    expect(seen).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
    ]);
  });
});

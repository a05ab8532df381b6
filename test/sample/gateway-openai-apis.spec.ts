/**
 * The sample gateway's Responses, Embeddings and Models endpoints, in process on its simulated
 * deployments, driven by the official `openai` client pointed at `<gateway>/v1`; and Anthropic
 * token counting, driven by the official `@anthropic-ai/sdk` client.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { BadRequestError, NotFoundError, RateLimitError } from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { Switchboard } from 'nestjs-switchboard';
import { simulatedEmbedding } from 'nestjs-switchboard/testing';
import { createGateway, type Gateway } from '../../sample/main';
import { Simulation } from '../../sample/simulation/simulation';

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-sonnet-5';

let gateway: Gateway;
let openai: OpenAI;
let sb: Switchboard;
let simulation: Simulation;

beforeAll(async () => {
  gateway = await createGateway({
    port: 0,
    host: '127.0.0.1',
    simulation: { latencyFactor: 0, chunkDelay: 0 },
    logger: false,
  });
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  sb = gateway.app.get(Switchboard);
  simulation = gateway.app.get(Simulation);
});

afterAll(() => gateway?.close());

afterEach(() => {
  simulation.upstream.reset();
  for (const d of sb.deployments.values()) for (const m of d.models.values()) m.markUp();
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: unknown) => error,
  );
}

/** The simulated deployments that answered a request of `api` since the last reset. */
function answeredBy(api: string): string[] {
  return simulation.upstream.deployments
    .filter((d) => d.requests.some((r) => r.api === api))
    .map((d) => d.name);
}

describe('Responses (openai client)', () => {
  it('answers create()', async () => {
    const response = await openai.responses.create({ model: GPT, input: 'Hello, responses!' });
    expect(response.object).toBe('response');
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('Hello, responses!');
    expect(response.usage?.total_tokens).toBeGreaterThan(0);
  });

  it('streams the Responses SSE events, as the SDK reads them', async () => {
    const stream = await openai.responses.create({
      model: GPT,
      input: 'one two three',
      stream: true,
    });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    expect(events[0]?.type).toBe('response.created');
    expect(events.at(-1)?.type).toBe('response.completed');
    const text = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : []));
    expect(text.join('')).toBe('one two three');

    const helper = openai.responses.stream({ model: GPT, input: 'helper stream' });
    const final = await helper.finalResponse();
    expect(final.output).toMatchObject([{ content: [{ text: 'helper stream' }] }]);
  });

  it('keeps a chain on the deployment that stored it, and retrieves from there', async () => {
    const first = await openai.responses.create({ model: GPT, input: 'turn 0' });
    let previous = first.id;
    for (let i = 1; i < 5; i++) {
      const next = await openai.responses.create({
        model: GPT,
        input: `turn ${i}`,
        previous_response_id: previous,
      });
      expect(next.previous_response_id).toBe(previous);
      previous = next.id;
    }
    expect(answeredBy('responses')).toHaveLength(1);
    const retrieved = await openai.responses.retrieve(previous);
    expect(retrieved.id).toBe(previous);
    expect(retrieved.output_text).toBe('turn 4');

    // An id no deployment is known to hold is a missing response, and asks no deployment.
    const before = simulation.upstream.deployments.reduce((n, d) => n + d.requests.length, 0);
    const missing = await rejection(openai.responses.retrieve('resp_unknown'));
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as NotFoundError).message).toMatch(/resp_unknown/);
    const after = simulation.upstream.deployments.reduce((n, d) => n + d.requests.length, 0);
    expect(after).toBe(before);

    // The holder cooling down: the chain is refused, naming the id, and not sent elsewhere.
    const [home] = answeredBy('responses');
    sb.deployments.get(home!)!.models.get(GPT)!.markDown(30_000);
    const refused = await rejection(
      openai.responses.create({ model: GPT, input: 'turn 5', previous_response_id: previous }),
    );
    expect(refused).toBeInstanceOf(BadRequestError);
    expect((refused as BadRequestError).message).toContain(
      `${previous} lives on deployment ${home}`,
    );
    expect(answeredBy('responses')).toEqual([home]);
  });

  it('answers bad requests, unknown models and rate limits in the OpenAI error shape', async () => {
    const missing = await rejection(openai.responses.create({ model: GPT } as never));
    expect(missing).toBeInstanceOf(BadRequestError);
    expect((missing as BadRequestError).param).toBe('input');
    const unknown = await rejection(openai.responses.create({ model: 'gpt-9', input: 'x' }));
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect((unknown as NotFoundError).code).toBe('model_not_found');
    const wrongApi = await rejection(openai.responses.create({ model: CLAUDE, input: 'x' }));
    expect(wrongApi).toBeInstanceOf(BadRequestError);
    expect((wrongApi as BadRequestError).message).toMatch(/served through \/v1\/messages/);
    const wrongPath = await rejection(
      new OpenAI({ baseURL: `${gateway.url}`, apiKey: 'unused', maxRetries: 0 }).post(
        '/v1/messages',
        {
          body: { model: GPT, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] },
        },
      ),
    );
    expect(wrongPath).toBeInstanceOf(BadRequestError);
    expect((wrongPath as BadRequestError).message).toMatch(
      /served through \/v1\/chat\/completions, \/v1\/responses, \/v1\/embeddings/,
    );

    for (const d of simulation.upstream.deployments) {
      d.fail({ kind: 'status', status: 429, retryAfterMs: 2_000 }, Infinity);
    }
    const limited = await rejection(openai.responses.create({ model: GPT, input: 'x' }));
    expect(limited).toBeInstanceOf(RateLimitError);
    expect((limited as RateLimitError).headers.get('retry-after')).not.toBeNull();
  });
});

describe('Embeddings (openai client)', () => {
  it('answers float and base64 embeddings, as the SDK decodes them', async () => {
    // The simulated deployments embed with any model they are asked for.
    const inputs = Array.from({ length: 20 }, (_, i) => `text ${i}`);
    const floats = await openai.embeddings.create({
      model: GPT,
      input: inputs,
      encoding_format: 'float',
      dimensions: 32,
    });
    expect(floats.data).toHaveLength(20);
    expect(floats.data[3]?.embedding).toEqual(simulatedEmbedding('text 3', 32));
    expect(floats.usage.prompt_tokens).toBe(
      inputs.reduce((sum, text) => sum + Math.ceil(text.length / 4), 0),
    );
    // No encoding_format: the SDK asks for base64 and decodes it.
    const decoded = await openai.embeddings.create({ model: GPT, input: inputs, dimensions: 32 });
    expect(decoded.data.map((d) => d.embedding)).toEqual(floats.data.map((d) => d.embedding));
  });

  it('answers bad requests in the OpenAI error shape', async () => {
    const missing = await rejection(openai.embeddings.create({ model: GPT } as never));
    expect(missing).toBeInstanceOf(BadRequestError);
    expect((missing as BadRequestError).param).toBe('input');
    const upstream = await rejection(
      openai.embeddings.create({ model: GPT, input: '', encoding_format: 'float' }),
    );
    expect(upstream).toBeInstanceOf(BadRequestError);
    expect((upstream as BadRequestError).param).toBe('input');
  });
});

describe('Models (openai client)', () => {
  it('lists the models the switchboard serves and retrieves one', async () => {
    const ids: string[] = [];
    for await (const model of openai.models.list()) {
      expect(model.object).toBe('model');
      ids.push(model.id);
    }
    expect(ids.sort()).toEqual([...sb.registry.models.keys()].sort());
    expect(ids).toEqual(expect.arrayContaining([GPT, CLAUDE]));
    const one = await openai.models.retrieve(GPT);
    expect(one).toMatchObject({ id: GPT, object: 'model', owned_by: 'openai' });
    const unknown = await rejection(openai.models.retrieve('gpt-9'));
    expect(unknown).toBeInstanceOf(NotFoundError);
  });
});

describe('Token counting (anthropic client)', () => {
  it('counts through a deployment serving the model, charging none of its quota', async () => {
    const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: 'unused', maxRetries: 0 });
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'How many tokens is this prompt, roughly?' },
    ];
    const used = () =>
      [...sb.deployments.values()].flatMap((d) => [...d.models.values()].map((m) => m.tpmUsage));
    const before = used();
    const counted = await anthropic.messages.countTokens({ model: CLAUDE, messages });
    expect(used()).toEqual(before);
    expect(answeredBy('count_tokens')).toHaveLength(1);
    expect(answeredBy('count_tokens')[0]).toMatch(/^foundry-/);
    // The same prompt, sent: its input is what was counted.
    const message = await anthropic.messages.create({ model: CLAUDE, max_tokens: 16, messages });
    expect(counted.input_tokens).toBe(message.usage.input_tokens);

    const missing = await rejection(anthropic.messages.countTokens({ model: CLAUDE } as never));
    expect(missing).toBeInstanceOf(Anthropic.BadRequestError);
    expect((missing as Error).message).toMatch(/messages: Field required/);
    const wrongApi = await rejection(anthropic.messages.countTokens({ model: GPT, messages }));
    expect(wrongApi).toBeInstanceOf(Anthropic.BadRequestError);
    expect((wrongApi as Error).message).toMatch(/\/v1\/chat\/completions/);
  });
});

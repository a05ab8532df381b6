import Anthropic, { BadRequestError as AnthropicBadRequestError } from '@anthropic-ai/sdk';
import AnthropicFoundry from '@anthropic-ai/foundry-sdk';
import OpenAI, { AzureOpenAI, BadRequestError, NotFoundError } from 'openai';

import {
  simulatedEmbedding,
  startSimulatedUpstream,
  type SimulatedUpstream,
} from 'nestjs-switchboard/testing';

describe('simulated embeddings, models and token counting', () => {
  let upstream: SimulatedUpstream;
  const openai = (name: string): OpenAI =>
    new OpenAI(upstream.deployment(name).openaiClientOptions());

  beforeAll(async () => {
    upstream = await startSimulatedUpstream({
      deployments: [{ name: 'a' }, { name: 'b', models: ['gpt-4.1', 'text-embedding-3-large'] }],
    });
  });
  afterEach(() => upstream.reset());
  afterAll(() => upstream.close());

  describe('embeddings', () => {
    it('answers float vectors derived from the input text, with usage', async () => {
      const inputs = Array.from({ length: 50 }, (_, i) => `input number ${i}`);
      const result = await openai('a').embeddings.create({
        model: 'text-embedding-3-small',
        input: inputs,
        encoding_format: 'float',
      });
      expect(result.object).toBe('list');
      expect(result.data.map((d) => d.index)).toEqual(inputs.map((_, i) => i));
      expect(result.data[0]?.embedding).toHaveLength(1536);
      expect(result.data[7]?.embedding).toEqual(simulatedEmbedding('input number 7', 1536));
      const norm = Math.hypot(...(result.data[0]?.embedding ?? []));
      expect(norm).toBeCloseTo(1, 5);
      expect(result.data[0]?.embedding).not.toEqual(result.data[1]?.embedding);
      const tokens = inputs.reduce((sum, text) => sum + Math.ceil(text.length / 4), 0);
      expect(result.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
      expect(upstream.deployment('a').stats).toMatchObject({ ok: 1, promptTokens: tokens });
      expect(upstream.deployment('a').requests.at(-1)).toMatchObject({ api: 'embeddings' });
    });

    it('answers base64 (the SDK default, decoded by it) with the same vectors everywhere', async () => {
      const decoded = await openai('a').embeddings.create({
        model: 'text-embedding-3-small',
        input: 'same text',
        dimensions: 64,
      });
      const sent = upstream.deployment('a').requests.at(-1)?.body as Record<string, unknown>;
      expect(sent['encoding_format']).toBe('base64');
      const floats = await openai('b').embeddings.create({
        model: 'text-embedding-3-small',
        input: 'same text',
        dimensions: 64,
        encoding_format: 'float',
      });
      expect(decoded.data[0]?.embedding).toEqual(floats.data[0]?.embedding);
      expect(decoded.data[0]?.embedding).toHaveLength(64);
      const raw = await openai('a').embeddings.create({
        model: 'text-embedding-3-small',
        input: 'same text',
        dimensions: 64,
        encoding_format: 'base64',
      });
      expect(typeof raw.data[0]?.embedding).toBe('string');
    });

    it('counts token arrays by length and serves the Azure deployments route', async () => {
      const a = upstream.deployment('a');
      const azure = new AzureOpenAI({
        endpoint: a.azureEndpoint,
        apiKey: 'k',
        apiVersion: '2024-10-21',
        deployment: 'emb',
        maxRetries: 0,
      });
      const result = await azure.embeddings.create({
        model: 'text-embedding-3-large',
        input: [
          [1, 2, 3],
          [4, 5],
        ],
        encoding_format: 'float',
      });
      expect(result.usage.prompt_tokens).toBe(5);
      expect(result.data[0]?.embedding).toHaveLength(3072);
    });

    it('rejects invalid inputs with a 400 naming the parameter', async () => {
      for (const input of ['', [], ['ok', 3]] as never[]) {
        await expect(
          openai('a').embeddings.create({ model: 'm', input, encoding_format: 'float' }),
        ).rejects.toMatchObject({ status: 400, param: 'input' });
      }
      await expect(
        openai('a').embeddings.create({
          model: 'm',
          input: 'x',
          encoding_format: 'hex' as never,
        }),
      ).rejects.toBeInstanceOf(BadRequestError);
    });
  });

  describe('models', () => {
    it('lists the deployment models in the OpenAI list shape and retrieves one', async () => {
      const ids: string[] = [];
      for await (const model of openai('b').models.list()) ids.push(model.id);
      expect(ids).toEqual(['gpt-4.1', 'text-embedding-3-large']);
      const defaults: string[] = [];
      for await (const model of openai('a').models.list()) defaults.push(model.id);
      expect(defaults).toContain('gpt-4o-mini');
      const model = await openai('b').models.retrieve('gpt-4.1');
      expect(model).toMatchObject({ id: 'gpt-4.1', object: 'model', owned_by: 'system' });
      await expect(openai('b').models.retrieve('gpt-4o')).rejects.toBeInstanceOf(NotFoundError);
      expect(upstream.deployment('b').requests.map((r) => r.api)).toEqual([
        'models',
        'models',
        'models',
      ]);
    });
  });

  describe('count_tokens', () => {
    it('counts the prompt as Messages would charge it, on Anthropic and Foundry clients', async () => {
      const a = upstream.deployment('a');
      const params = {
        model: 'claude-sonnet-5',
        system: 'You are terse.',
        messages: [{ role: 'user' as const, content: 'How many tokens is this?' }],
      };
      const anthropic = new Anthropic(a.anthropicClientOptions());
      const counted = await anthropic.messages.countTokens(params);
      expect(counted).toEqual({ input_tokens: Math.ceil((14 + 24) / 4) });
      const foundry = new AnthropicFoundry(a.anthropicClientOptions());
      expect(await foundry.messages.countTokens(params)).toEqual(counted);
      const message = await anthropic.messages.create({ ...params, max_tokens: 64 });
      expect(message.usage.input_tokens).toBe(counted.input_tokens);
      expect(a.requests.map((r) => r.api)).toEqual(['count_tokens', 'count_tokens', 'messages']);
      await expect(
        anthropic.messages.countTokens({ model: 'claude-sonnet-5', messages: [] }),
      ).rejects.toBeInstanceOf(AnthropicBadRequestError);
    });
  });
});

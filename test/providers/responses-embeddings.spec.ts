import OpenAI from 'openai';
import { APIPromise } from 'openai/core/api-promise';
import { zodTextFormat } from 'openai/helpers/zod';
import { ResponseStream } from 'openai/lib/responses/ResponseStream';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { z } from 'zod';
import {
  createSwitchboard,
  SwitchboardError,
  type DeploymentConfig,
  type Switchboard,
} from 'nestjs-switchboard';
import type { StateStore } from 'nestjs-switchboard/extend';
import { simulatedEmbedding, SimulatedUpstream } from 'nestjs-switchboard/testing';

const GPT = 'gpt-4o-mini';
const EMBED = 'text-embedding-3-small';
const CLAUDE = 'claude-sonnet-5';
const NAMES = ['oai0', 'oai1', 'oai2'];

function configs(upstream: SimulatedUpstream): DeploymentConfig[] {
  return [
    ...NAMES.map((name): DeploymentConfig => ({
      provider: 'openai',
      name,
      baseURL: upstream.deployment(name).openaiBaseURL,
      apiKey: `sk-${name}`,
      models: [
        // Uncapped calls charged no reservation: usage is what the upstream counted.
        { name: GPT, tpm: 1_000_000, rpm: 10_000, outputReservation: 0 },
        { name: EMBED, tpm: 1_000_000, rpm: 10_000 },
      ],
    })),
    {
      provider: 'anthropic',
      name: 'claude0',
      baseURL: upstream.deployment('claude0').anthropicBaseURL,
      apiKey: 'k',
      models: [{ name: CLAUDE, tpm: 100_000, rpm: 1_000 }],
    },
  ];
}

describe('Responses and embeddings through the switchboard', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard;
  const used = (name: string, model = GPT) => {
    const s = sb.deployments.get(name)!.models.get(model)!;
    return { tokens: s.tpmUsage, requests: s.rpmUsage };
  };
  const total = (model = GPT) => NAMES.reduce((n, name) => n + used(name, model).tokens, 0);
  const upstreamTokens = () =>
    NAMES.reduce((n, name) => n + upstream.deployment(name).stats.totalTokens, 0);
  const requests = () =>
    Object.fromEntries(NAMES.map((n) => [n, upstream.deployment(n).stats.requests]));
  const holder = (id: string) =>
    NAMES.find((n) => upstream.deployment(n).storedResponseIds.includes(id));

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [...NAMES, 'claude0'].map((name) => ({ name })),
    });
  });
  afterAll(() => upstream.close());
  beforeEach(() => {
    sb = createSwitchboard({ deployments: configs(upstream), ratelimitWindow: 0 });
  });
  afterEach(async () => {
    await sb.close();
    upstream.reset();
    for (const d of upstream.deployments) d.forgetResponses();
  });

  describe('responses', () => {
    it('create: the SDK Response, output_text, usage charged as the upstream counted it', async () => {
      const promise = sb.responses.create({ model: GPT, input: 'Hello responses' });
      expect(promise).toBeInstanceOf(APIPromise);
      const { data, request_id } = await promise.withResponse();
      expect(data.object).toBe('response');
      expect(data.output_text).toBe('Hello responses');
      const name = holder(data.id)!;
      expect(request_id).toMatch(new RegExp(`^req_${name}_`));
      expect(used(name)).toEqual({ tokens: data.usage!.total_tokens, requests: 1 });
      expect(total()).toBe(upstreamTokens());
    });

    it('stream: true gives the SDK Stream of events; usage from response.completed', async () => {
      const stream = await sb.responses.create({
        model: GPT,
        input: 'streamed words here',
        stream: true,
      });
      const events: ResponseStreamEvent[] = [];
      for await (const event of stream) events.push(event);
      expect(events[0]!.type).toBe('response.created');
      expect(events.at(-1)!.type).toBe('response.completed');
      expect(total()).toBe(upstreamTokens());
      expect(total()).toBeGreaterThan(0);
    });

    it('.stream() is the SDK ResponseStream: deltas and finalResponse()', async () => {
      const stream = sb.responses.stream({ model: GPT, input: 'helper stream text' });
      expect(stream).toBeInstanceOf(ResponseStream);
      let text = '';
      stream.on('response.output_text.delta', (e) => (text += e.delta));
      const final = await stream.finalResponse();
      expect(text).toBe('helper stream text');
      expect(final.output).toMatchObject([{ content: [{ text: 'helper stream text' }] }]);
      expect(total()).toBe(upstreamTokens());
    });

    it('parse with zodTextFormat', async () => {
      const Weather = z.object({ city: z.string(), degrees: z.number() });
      const parsed = await sb.responses.parse({
        model: GPT,
        input: 'Weather in Oslo?',
        text: { format: zodTextFormat(Weather, 'weather') },
      });
      expect(typeof parsed.output_parsed!.city).toBe('string');
      expect(typeof parsed.output_parsed!.degrees).toBe('number');
    });

    it('10 chained calls over 3 deployments, no session_id: each goes to the one holding the chain', async () => {
      let previous: string | undefined;
      let first: string | undefined;
      for (let i = 0; i < 10; i++) {
        const r = await sb.responses.create({
          model: GPT,
          input: `turn ${i}`,
          ...(previous ? { previous_response_id: previous } : {}),
        });
        expect(r.previous_response_id ?? undefined).toBe(previous);
        first ??= holder(r.id);
        expect(holder(r.id)).toBe(first);
        previous = r.id;
      }
      expect(requests()[first!]).toBe(10);
      for (const d of upstream.deployments) expect(d.stats.byStatus[404] ?? 0).toBe(0);
      // Unchained calls still spread.
      await Promise.all(
        Array.from({ length: 30 }, (_, i) => sb.responses.create({ model: GPT, input: `${i}` })),
      );
      expect(Object.values(requests()).every((n) => n > 0)).toBe(true);
    });

    it('retrieve(id) reads from the deployment that created it, unmetered', async () => {
      const r = await sb.responses.create({ model: GPT, input: 'keep me' });
      const name = holder(r.id)!;
      const before = used(name);
      const again = await sb.responses.retrieve(r.id);
      expect(again.id).toBe(r.id);
      expect(again.output_text).toBe('keep me');
      expect(requests()[name]).toBe(2);
      expect(used(name)).toEqual(before);
    });

    it('an id the switchboard never saw is a SwitchboardError naming it, and nothing is sent', async () => {
      await expect(sb.responses.retrieve('resp_unknown')).rejects.toThrow(
        /No deployment is known to hold resp_unknown/,
      );
      await expect(
        sb.responses.create({ model: GPT, input: 'x', previous_response_id: 'resp_other' }),
      ).rejects.toBeInstanceOf(SwitchboardError);
      expect(Object.values(requests()).reduce((a, b) => a + b)).toBe(0);
    });

    it('the holder cooling down: a SwitchboardError naming the id, never another deployment', async () => {
      const r = await sb.responses.create({ model: GPT, input: 'first' });
      const name = holder(r.id)!;
      sb.deployments.get(name)!.models.get(GPT)!.markDown(30_000);
      const sent = Object.values(requests()).reduce((a, b) => a + b);
      const next = sb.responses.create({ model: GPT, input: 'second', previous_response_id: r.id });
      await expect(next).rejects.toBeInstanceOf(SwitchboardError);
      await expect(next).rejects.toThrow(
        new RegExp(`${r.id} lives on deployment ${name}, which is cooling down`),
      );
      expect(Object.values(requests()).reduce((a, b) => a + b)).toBe(sent);
    });

    it('a chained call that fails upstream is not retried elsewhere', async () => {
      const r = await sb.responses.create({ model: GPT, input: 'first' });
      const name = holder(r.id)!;
      upstream.deployment(name).fail({ kind: 'status', status: 500 });
      await expect(
        sb.responses.create({ model: GPT, input: 'second', previous_response_id: r.id }),
      ).rejects.toBeInstanceOf(OpenAI.InternalServerError);
      for (const other of NAMES.filter((n) => n !== name)) expect(requests()[other]).toBe(0);
    });

    it('unchained calls fail over on a 429', async () => {
      const first = sb.selectDeployment({ model: GPT, sessionId: 's' }).name;
      upstream.deployment(first).fail({ kind: 'status', status: 429, retryAfterMs: 5_000 });
      const r = await sb.responses.create({ model: GPT, input: 'retry me', session_id: 's' });
      expect(holder(r.id)).not.toBe(first);
      expect(sb.deployments.get(first)!.models.get(GPT)!.isCooling()).toBe(true);
    });

    it('a chain started on one instance continues on another through the state store', async () => {
      const shared = new Map<string, string>();
      const store = (): StateStore => ({
        attach: () => undefined,
        health: () => ({ status: 'up' }),
        close: () => Promise.resolve(),
        rememberResponse: (id, d) => void shared.set(id, d),
        lookupResponse: (id) => Promise.resolve(shared.get(id)),
      });
      const a = createSwitchboard({
        deployments: configs(upstream),
        ratelimitWindow: 0,
        state: store(),
      });
      const b = createSwitchboard({
        deployments: configs(upstream),
        ratelimitWindow: 0,
        state: store(),
      });
      try {
        const r = await a.responses.create({ model: GPT, input: 'on a' });
        const next = await b.responses.create({
          model: GPT,
          input: 'on b',
          previous_response_id: r.id,
        });
        expect(holder(next.id)).toBe(holder(r.id));
        expect((await b.responses.retrieve(next.id)).id).toBe(next.id);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('a Claude model on sb.responses is a SwitchboardError naming the right surface', async () => {
      await expect(sb.responses.create({ model: CLAUDE, input: 'x' })).rejects.toThrow(
        /claude-sonnet-5 is served by anthropic deployments only .*use sb\.messages\.create\(\)/,
      );
    });
  });

  describe('embeddings', () => {
    it('50 inputs: the upstream vectors (base64 decoded by the SDK), usage charged', async () => {
      const inputs = Array.from({ length: 50 }, (_, i) => `embedding input number ${i}`);
      const promise = sb.embeddings.create({ model: EMBED, input: inputs });
      // The batch is charged as its token total before anything is sent.
      const charged = NAMES.reduce((n, name) => n + used(name, EMBED).tokens, 0);
      expect(charged).toBe(Math.ceil(inputs.join('').length / 4));
      const { data: result, response } = await promise.withResponse();
      expect(response.status).toBe(200);
      expect(result.data).toHaveLength(50);
      for (const [i, item] of result.data.entries()) {
        expect(item.embedding).toEqual(simulatedEmbedding(inputs[i]!, 1536));
      }
      expect(total(EMBED)).toBe(result.usage.prompt_tokens);
      expect(total(EMBED)).toBe(
        NAMES.reduce((n, d) => n + upstream.deployment(d).stats.promptTokens, 0),
      );
    });

    it('float vectors pass through as the SDK returns them', async () => {
      const result = await sb.embeddings.create({
        model: EMBED,
        input: 'plain floats',
        encoding_format: 'float',
        dimensions: 32,
      });
      expect(result.data[0]!.embedding).toEqual(simulatedEmbedding('plain floats', 32));
    });

    it('fails over on a 429 and cools the deployment that sent it', async () => {
      const first = sb.selectDeployment({ model: EMBED, sessionId: 'e' }).name;
      upstream.deployment(first).fail({ kind: 'status', status: 429, retryAfterMs: 5_000 });
      const { data, request_id } = await sb.embeddings
        .create({ model: EMBED, input: ['a', 'b'], session_id: 'e' })
        .withResponse();
      expect(data.data).toHaveLength(2);
      expect(request_id).not.toMatch(new RegExp(`^req_${first}_`));
      expect(sb.deployments.get(first)!.models.get(EMBED)!.isCooling()).toBe(true);
      expect(used(first, EMBED)).toEqual({ tokens: 0, requests: 1 });
    });
  });

  describe('messages.countTokens', () => {
    it('is passed through to a deployment serving the model and charges nothing', async () => {
      const { data, request_id } = await sb.messages
        .countTokens({ model: CLAUDE, messages: [{ role: 'user', content: 'How many tokens?' }] })
        .withResponse();
      expect(data.input_tokens).toBe(Math.ceil('How many tokens?'.length / 4));
      expect(request_id).toMatch(/^req_claude0_/);
      expect(used('claude0', CLAUDE)).toEqual({ tokens: 0, requests: 0 });
      expect(upstream.deployment('claude0').requests.at(-1)).toMatchObject({ api: 'count_tokens' });
    });
  });
});

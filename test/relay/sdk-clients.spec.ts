/**
 * `sb.fetch` under the official `openai` and `@anthropic-ai/sdk` clients, in process, over
 * simulated deployments: balanced, accounted as the facade accounts, errors in each API's shape.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { Switchboard } from 'nestjs-switchboard';
import { seededRandom, type SimulatedUpstream } from 'nestjs-switchboard/testing';
import { CLAUDE, counted, EMBED, GPT, received, startUpstream, switchboard } from './rig';

let upstream: SimulatedUpstream;
let sb: Switchboard;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(() => upstream.close());
beforeEach(() => {
  sb = switchboard(upstream);
  openai = new OpenAI({
    apiKey: 'client-key',
    baseURL: 'https://client.example/v1',
    fetch: sb.fetch,
    maxRetries: 0,
  });
  anthropic = new Anthropic({
    apiKey: 'client-key',
    baseURL: 'https://client.example',
    fetch: sb.fetch,
    maxRetries: 0,
  });
});
afterEach(async () => {
  await sb.close();
  upstream.reset();
  for (const d of upstream.deployments) d.forgetResponses();
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: unknown) => error,
  );
}

describe('new OpenAI({ fetch: sb.fetch })', () => {
  it('answers chat completions over the three deployments, with the deployment keys only', async () => {
    for (let i = 0; i < 9; i++) {
      const completion = await openai.chat.completions.create({
        model: GPT,
        messages: [{ role: 'user', content: `hello ${i}` }],
      });
      expect(completion.choices[0]?.message.content).toBe(`hello ${i}`);
    }
    const counts = received(upstream);
    expect(Object.keys(counts).sort()).toEqual(['aoai0', 'aoai1', 'aoai2']);
    for (const d of upstream.deployments) {
      for (const r of d.requests) {
        expect(r.headers.authorization ?? r.headers['api-key']).toContain(`key-${d.name}`);
        expect(JSON.stringify(r.headers)).not.toContain('client-key');
        expect(r.headers.host).not.toContain('client.example');
      }
    }
  });

  it('streams chat with usage, and embeddings and responses', async () => {
    const stream = await openai.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'one two three' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe('one two three');
    expect(usage?.total_tokens).toBeGreaterThan(0);

    const e = await openai.embeddings.create({ model: EMBED, input: ['a', 'b'] });
    expect(e.data).toHaveLength(2);
    const r = await openai.responses.create({ model: GPT, input: 'hi there' });
    expect(r.output_text).toBe('hi there');
    const again = await openai.responses.retrieve(r.id);
    expect(again.id).toBe(r.id);
    const models = await openai.models.list();
    expect(models.data.map((m) => m.id).sort()).toEqual([CLAUDE, EMBED, GPT].sort());
  });

  it('counts calls exactly as the facade counts the same calls', async () => {
    const messages = [{ role: 'user' as const, content: 'count these words please' }];
    await sb.close();
    sb = switchboard(upstream, { random: seededRandom(7) });
    for (let i = 0; i < 3; i++) {
      await sb.chat.completions.create({ model: GPT, messages, max_tokens: 50, session_id: 's' });
    }
    const viaFacade = counted(sb);
    await sb.close();
    upstream.reset();
    sb = switchboard(upstream, { random: seededRandom(7) });
    openai = new OpenAI({ apiKey: 'x', baseURL: 'http://any/v1', fetch: sb.fetch, maxRetries: 0 });
    for (let i = 0; i < 3; i++) {
      await openai.chat.completions.create(
        { model: GPT, messages, max_tokens: 50 },
        { headers: { 'x-session-id': 's' } },
      );
    }
    expect(counted(sb)).toEqual(viaFacade);
  });

  it('answers an unknown model with 404 and a malformed body with 400, sending nothing', async () => {
    const unknown = await rejection(
      openai.chat.completions.create({
        model: 'gpt-9',
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect((unknown as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    const bad = await rejection(
      openai.chat.completions.create({ model: GPT, messages: 'nope' } as never),
    );
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect((bad as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('messages');
    const res = await sb.fetch('http://x/v1/chat/completions', {
      method: 'POST',
      body: '{"model":',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
    expect(received(upstream)).toEqual({});
  });

  it('keeps a 429 of one deployment from the client', async () => {
    await sb.close();
    sb = switchboard(upstream, { random: seededRandom(1) });
    openai = new OpenAI({ apiKey: 'x', baseURL: 'http://any/v1', fetch: sb.fetch, maxRetries: 0 });
    upstream
      .deployment('aoai1')
      .fail({ kind: 'status', status: 429, retryAfterMs: 5_000 }, Infinity);
    for (let i = 0; i < 6; i++) {
      const c = await openai.chat.completions.create({
        model: GPT,
        messages: [{ role: 'user', content: `t${i}` }],
      });
      expect(c.choices[0]?.message.content).toBe(`t${i}`);
    }
    // It was tried once, answered 429, and cooled: the call went on to another deployment.
    expect(upstream.deployment('aoai1').stats.requests).toBe(1);
  });

  it('answers the switchboard’s own 429 with retry-after, and 503 once closed', async () => {
    await sb.close();
    sb = switchboard(upstream, { ratelimitWindow: 60_000 }, 1);
    const call = () =>
      sb.fetch('http://x/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ model: GPT, messages: [{ role: 'user', content: 'x' }] }),
      });
    for (let i = 0; i < 3; i++) expect((await call()).status).toBe(200);
    upstream.reset();
    const res = await call();
    expect(res.status).toBe(429);
    const seconds = Number(res.headers.get('retry-after'));
    const ms = Number(res.headers.get('retry-after-ms'));
    expect(Number.isInteger(seconds) && seconds >= 1 && seconds <= 60).toBe(true);
    expect(Number.isInteger(ms) && ms >= 1 && ms <= 60_000).toBe(true);
    expect(await res.json()).toMatchObject({ error: { type: 'rate_limit_error' } });
    await sb.close();
    const closed = await call();
    expect(closed.status).toBe(503);
    expect(closed.headers.get('retry-after')).toBe('1');
    expect(received(upstream)).toEqual({});
  });

  it('works detached', async () => {
    const f = sb.fetch;
    const res = await f('/v1/embeddings', {
      method: 'POST',
      body: JSON.stringify({ model: EMBED, input: 'x', encoding_format: 'float' }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(1);
  });
});

describe('new Anthropic({ fetch: sb.fetch })', () => {
  it('answers and streams messages, counts tokens, keeps a session', async () => {
    const m = await anthropic.messages.create({
      model: CLAUDE,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hello, Claude!' }],
    });
    expect(m.content[0]).toMatchObject({ type: 'text', text: 'Hello, Claude!' });
    const final = await anthropic.messages
      .stream({ model: CLAUDE, max_tokens: 64, messages: [{ role: 'user', content: 'again' }] })
      .finalMessage();
    expect(final.content[0]).toMatchObject({ type: 'text', text: 'again' });
    const count = await anthropic.messages.countTokens({
      model: CLAUDE,
      messages: [{ role: 'user', content: 'Hello, Claude!' }],
    });
    expect(count.input_tokens).toBe(m.usage.input_tokens);
    upstream.reset();
    for (let i = 0; i < 4; i++) {
      await anthropic.messages.create(
        { model: CLAUDE, max_tokens: 16, messages: [{ role: 'user', content: `turn ${i}` }] },
        { headers: { 'x-session-id': 'conversation' } },
      );
    }
    expect(Object.values(received(upstream))).toEqual([4]);
  });

  it('answers errors in Anthropic’s shape', async () => {
    const bad = await rejection(
      anthropic.messages.create({
        model: CLAUDE,
        messages: [{ role: 'user', content: 'x' }],
      } as never),
    );
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    expect((bad as InstanceType<typeof Anthropic.BadRequestError>).error).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens: Field required' },
    });
    const unknown = await rejection(
      anthropic.messages.create({
        model: 'claude-9',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect((unknown as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error' },
    });
    expect(received(upstream)).toEqual({});
  });
});

/**
 * The AI SDK and LangChain given `sb.fetch`, in process, over simulated deployments: every call
 * balanced and accounted by the switchboard, the client's own key and host never sent upstream.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { APICallError, embed, generateObject, generateText, streamText } from 'ai';
import { z } from 'zod';
import type { Switchboard } from 'nestjs-switchboard';
import { seededRandom, type SimulatedUpstream } from 'nestjs-switchboard/testing';
import { CLAUDE, counted, EMBED, GPT, received, startUpstream, switchboard } from './rig';

let upstream: SimulatedUpstream;
let sb: Switchboard;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(() => upstream.close());
beforeEach(() => {
  sb = switchboard(upstream);
});
afterEach(async () => {
  await sb.close();
  upstream.reset();
  for (const d of upstream.deployments) d.forgetResponses();
});

/** The AI SDK's OpenAI provider on the switchboard: its key and host are never used. */
const aiOpenAI = () =>
  createOpenAI({ apiKey: 'client-key', baseURL: 'https://client.example/v1', fetch: sb.fetch });

function sentNoClientKey(): void {
  for (const d of upstream.deployments) {
    for (const r of d.requests) {
      expect(JSON.stringify(r.headers)).not.toContain('client-key');
      expect(r.headers.host).not.toContain('client.example');
    }
  }
}

describe('the AI SDK', () => {
  it('generateText over Chat Completions and Responses, balanced over three deployments', async () => {
    const openai = aiOpenAI();
    for (let i = 0; i < 6; i++) {
      const { text } = await generateText({ model: openai.chat(GPT), prompt: `chat ${i}` });
      expect(text).toBe(`chat ${i}`);
    }
    const { text, usage } = await generateText({
      model: openai.responses(GPT),
      prompt: 'responses here',
    });
    expect(text).toBe('responses here');
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(Object.keys(received(upstream)).sort()).toEqual(['aoai0', 'aoai1', 'aoai2']);
    sentNoClientKey();
  });

  it('streamText: the text as it streams and the usage reach the caller', async () => {
    const result = streamText({ model: aiOpenAI().chat(GPT), prompt: 'one two three four' });
    let text = '';
    for await (const part of result.textStream) text += part;
    expect(text).toBe('one two three four');
    const usage = await result.usage;
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(usage.outputTokens).toBeGreaterThan(0);
    // The switchboard counted what the stream reported.
    const tokens = Object.values(counted(sb)).reduce((n, c) => n + c.tokens, 0);
    expect(tokens).toBe((usage.inputTokens ?? 0) + (usage.outputTokens ?? 0));
  });

  it('generateObject and embed', async () => {
    const { object } = await generateObject({
      model: aiOpenAI().chat(GPT),
      schema: z.object({ city: z.string(), population: z.number() }),
      prompt: 'A city',
    });
    expect(typeof object.city).toBe('string');
    expect(typeof object.population).toBe('number');
    const { embedding } = await embed({ model: aiOpenAI().embedding(EMBED), value: 'embed me' });
    expect(embedding.length).toBeGreaterThan(0);
  });

  it('Claude through @ai-sdk/anthropic, text and stream', async () => {
    const anthropic = createAnthropic({
      apiKey: 'client-key',
      baseURL: 'https://client.example/v1',
      fetch: sb.fetch,
    });
    const { text } = await generateText({ model: anthropic(CLAUDE), prompt: 'Hello, Claude!' });
    expect(text).toBe('Hello, Claude!');
    const result = streamText({ model: anthropic(CLAUDE), prompt: 'stream it' });
    let streamed = '';
    for await (const part of result.textStream) streamed += part;
    expect(streamed).toBe('stream it');
    expect((await result.usage).outputTokens).toBeGreaterThan(0);
    sentNoClientKey();
  });

  it('keeps a conversation on one deployment with x-session-id', async () => {
    const openai = aiOpenAI();
    for (let i = 0; i < 5; i++) {
      await generateText({
        model: openai.chat(GPT),
        prompt: `turn ${i}`,
        headers: { 'x-session-id': 'conversation-7' },
      });
    }
    expect(Object.values(received(upstream))).toEqual([5]);
  });

  it('does not see a 429 of one deployment', async () => {
    await sb.close();
    sb = switchboard(upstream, { random: seededRandom(1) });
    upstream
      .deployment('aoai2')
      .fail({ kind: 'status', status: 429, retryAfterMs: 9_000 }, Infinity);
    for (let i = 0; i < 6; i++) {
      const { text } = await generateText({
        model: aiOpenAI().chat(GPT),
        prompt: `t${i}`,
        maxRetries: 0,
      });
      expect(text).toBe(`t${i}`);
    }
    // It was tried once, answered 429, and cooled: the call went on to another deployment.
    expect(upstream.deployment('aoai2').stats.requests).toBe(1);
  });

  it('gets an unknown model as a 404 in the API’s shape, with nothing sent upstream', async () => {
    const error = await generateText({
      model: aiOpenAI().chat('gpt-9'),
      prompt: 'x',
      maxRetries: 0,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(APICallError.isInstance(error)).toBe(true);
    const e = error as APICallError;
    expect(e.statusCode).toBe(404);
    expect(JSON.parse(e.responseBody!)).toMatchObject({ error: { code: 'model_not_found' } });
    expect(received(upstream)).toEqual({});
  });

  it('counts its calls exactly as the facade counts the same calls', async () => {
    const prompt = 'the same words each time';
    await sb.close();
    sb = switchboard(upstream, { random: seededRandom(3) });
    for (let i = 0; i < 4; i++) {
      await sb.chat.completions.create({
        model: GPT,
        messages: [{ role: 'user', content: prompt }],
        max_tokens: 40,
      });
    }
    const viaFacade = counted(sb);
    await sb.close();
    upstream.reset();
    sb = switchboard(upstream, { random: seededRandom(3) });
    for (let i = 0; i < 4; i++) {
      await generateText({ model: aiOpenAI().chat(GPT), prompt, maxOutputTokens: 40 });
    }
    expect(counted(sb)).toEqual(viaFacade);
  });
});

describe('LangChain', () => {
  const chat = () =>
    new ChatOpenAI({
      model: GPT,
      apiKey: 'client-key',
      maxRetries: 0,
      configuration: { baseURL: 'https://client.example/v1', fetch: sb.fetch },
    });

  it('invoke and stream', async () => {
    const message = await chat().invoke('Hello, LangChain!');
    expect(message.content).toBe('Hello, LangChain!');
    let text = '';
    let outputTokens = 0;
    for await (const chunk of await chat().stream('a b c d')) {
      text += String(chunk.content);
      outputTokens += chunk.usage_metadata?.output_tokens ?? 0;
    }
    expect(text).toBe('a b c d');
    expect(outputTokens).toBeGreaterThan(0);
    expect(Object.values(counted(sb)).reduce((n, c) => n + c.requests, 0)).toBe(2);
    sentNoClientKey();
  });
});

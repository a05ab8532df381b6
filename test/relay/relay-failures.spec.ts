import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { type BadRequestError } from 'openai';
import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import '../support/quiet-logs';

const SMALL = 'gpt-4o-mini';
const LARGE = 'gpt-4o';
const HAIKU = 'claude-haiku-5';
const PROMPT = 'one two three four five six';
const long = (tokens: number) => 'word '.repeat(Math.ceil((tokens * 4) / 5));

/**
 * `sb.fetch` (and so the gateway, which relays through it) carries the four: an OpenAI client
 * over it sees the first-token failover as a normal stream, and the rest as the API's own errors.
 */
describe('sb.fetch carries the stream deadlines and the refusals', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard;
  let openai: OpenAI;
  let anthropic: Anthropic;

  beforeEach(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [
        { name: 'east' },
        { name: 'west' },
        { name: 'large' },
        { name: 'haiku', contextWindow: 8_000 },
      ],
    });
    const at = (name: string) => upstream.deployment(name).openaiBaseURL;
    sb = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: at('east'),
          apiKey: 'k',
          models: [{ name: SMALL, contextWindow: 8_000 }],
        },
        {
          provider: 'openai',
          name: 'west',
          baseURL: at('west'),
          apiKey: 'k',
          priority: 1,
          models: [{ name: SMALL, contextWindow: 8_000 }],
        },
        {
          provider: 'openai',
          name: 'large',
          baseURL: at('large'),
          apiKey: 'k',
          models: [{ name: LARGE, contextWindow: 16_000 }],
        },
        {
          provider: 'anthropic',
          name: 'haiku',
          baseURL: upstream.deployment('haiku').anthropicBaseURL,
          apiKey: 'k',
          models: [{ name: HAIKU }],
        },
      ],
      fallbacks: { [SMALL]: [LARGE] },
      contentFilterFallbacks: { [LARGE]: [SMALL] },
      firstTokenTimeout: 500,
      streamIdleTimeout: 1_000,
    });
    openai = new OpenAI({
      apiKey: 'unused',
      baseURL: 'http://sb/v1',
      fetch: sb.fetch,
      maxRetries: 0,
    });
    anthropic = new Anthropic({
      apiKey: 'unused',
      baseURL: 'http://sb',
      fetch: sb.fetch,
      maxRetries: 0,
    });
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
  });
  afterEach(async () => {
    jest.useRealTimers();
    await sb.close();
    await upstream.close();
  });

  const text = async (s: AsyncIterable<OpenAI.ChatCompletionChunk>): Promise<string> => {
    let out = '';
    for await (const chunk of s) out += chunk.choices[0]?.delta.content ?? '';
    return out;
  };
  const stream = () =>
    openai.chat.completions.create({
      model: SMALL,
      messages: [{ role: 'user', content: PROMPT }],
      stream: true,
    });

  it('first-token failover reaches the client as a normal stream', async () => {
    const east = upstream.deployment('east');
    east.fail({ kind: 'stall' });
    const call = stream();
    await east.waitFor((d) => d.stats.byStatus[200] === 1);
    await jest.advanceTimersByTimeAsync(500);
    expect(await text(await call)).toBe(PROMPT);
    await east.whenIdle();
    expect(east.stats).toMatchObject({ requests: 1, aborted: 1 });
    expect(upstream.deployment('west').stats.ok).toBe(1);
  });

  it('a stalled stream ends in an error the client’s SDK throws', async () => {
    const east = upstream.deployment('east');
    east.fail({ kind: 'stall', afterEvents: 2 });
    const s = await stream();
    let seen = 0;
    let twoSeen!: () => void;
    const two = new Promise<void>((resolve) => (twoSeen = resolve));
    const outcome = (async () => {
      for await (const _chunk of s) if (++seen === 2) twoSeen();
    })().then(
      () => undefined,
      (error: unknown) => error,
    );
    await two;
    await jest.advanceTimersByTimeAsync(1_000);
    const error = await outcome;
    expect(error).toBeInstanceOf(OpenAI.APIError);
    // The relay's error event, as httpErrorFor words a timeout.
    expect((error as Error).message).toMatch(/did not answer in time/);
    await east.whenIdle();
    expect(east.stats).toMatchObject({ requests: 1, aborted: 1 });
  });

  it('a prompt beyond every window is a 400 in the API’s shape; one beyond the small window goes to the large model', async () => {
    const tooLong = await openai.chat.completions
      .create({ model: SMALL, max_tokens: 10, messages: [{ role: 'user', content: long(20_000) }] })
      .catch((e: unknown) => e);
    expect(tooLong).toBeInstanceOf(OpenAI.BadRequestError);
    expect((tooLong as Error).message).toMatch(/context window of 8000/);
    const wider = await openai.chat.completions.create({
      model: SMALL,
      max_tokens: 10,
      messages: [{ role: 'user', content: long(10_000) }],
    });
    expect(wider.model).toBe(LARGE);
    expect(
      upstream.deployment('east').stats.requests + upstream.deployment('west').stats.requests,
    ).toBe(0);
    // Anthropic's own "prompt is too long" is passed on in its shape when nothing can take it.
    const claude = await anthropic.messages
      .create({ model: HAIKU, max_tokens: 10, messages: [{ role: 'user', content: long(10_000) }] })
      .catch((e: unknown) => e);
    expect(claude).toBeInstanceOf(Anthropic.BadRequestError);
    expect((claude as Error).message).toMatch(/prompt is too long/);
  });

  it('the content filter: a fallback answers; without one the client gets Azure’s body with innererror', async () => {
    const large = upstream.deployment('large');
    large.fail({ kind: 'content-filter' });
    const answer = await openai.chat.completions.create({
      model: LARGE,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(answer.model).toBe(SMALL);
    const east = upstream.deployment('east');
    east.resetStats();
    east.fail({ kind: 'content-filter', category: 'sexual' });
    const error = (await openai.chat.completions
      .create({ model: SMALL, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e)) as BadRequestError;
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.error).toMatchObject({
      code: 'content_filter',
      innererror: { content_filter_result: { sexual: { filtered: true } } },
    });
    expect(east.stats.requests).toBe(1);
  });
});

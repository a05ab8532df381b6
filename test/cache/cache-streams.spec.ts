/**
 * The response cache over simulated deployments through the real SDKs: streams replayed event for
 * event, and every answer it must neither keep nor serve.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { streamText } from 'ai';
import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { ask, askClaude, CLAUDE, GPT } from '../support/upstream';

const TTL = 60_000;
const EMBED = 'text-embedding-3-small';
let upstream: SimulatedUpstream;
let sb: Switchboard;

beforeAll(async () => {
  upstream = await SimulatedUpstream.start({
    deployments: [{ name: 'plain' }, { name: 'eu' }, { name: 'claude' }],
  });
});
afterAll(() => upstream.close());
beforeEach(() => {
  sb = createSwitchboard({
    deployments: [
      {
        provider: 'openai',
        name: 'plain',
        baseURL: upstream.deployment('plain').openaiBaseURL,
        apiKey: 'k',
        models: [{ name: GPT }, { name: EMBED }],
      },
      {
        provider: 'openai',
        name: 'eu',
        baseURL: upstream.deployment('eu').openaiBaseURL,
        apiKey: 'k',
        // Less preferred: a call without tags goes to 'plain' while it has room.
        priority: 1,
        tags: ['eu'],
        models: [{ name: GPT }],
      },
      {
        provider: 'anthropic',
        name: 'claude',
        baseURL: upstream.deployment('claude').anthropicBaseURL,
        apiKey: 'k',
        models: [{ name: CLAUDE }],
      },
    ],
    ratelimitWindow: 0,
    failover: { attempts: 1 },
    cache: { ttl: TTL },
  });
});
afterEach(async () => {
  await sb.close();
  upstream.reset();
  for (const d of upstream.deployments) d.forgetResponses();
});

const sent = () => upstream.deployments.reduce((n, d) => n + d.stats.requests, 0);

async function drain<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const event of stream) out.push(event);
  return out;
}

describe('streams replayed', () => {
  it('chat chunks: the same events in the same order, one upstream request', async () => {
    const first = await drain(
      await sb.chat.completions.create(ask('count to five', { stream: true })),
    );
    const again = await drain(
      await sb.chat.completions.create(ask('count to five', { stream: true })),
    );
    expect(sent()).toBe(1);
    expect(first.length).toBeGreaterThan(2);
    expect(again).toEqual(first);
    // A whole call is not answered from the streamed entry, nor the reverse.
    await sb.chat.completions.create(ask('count to five'));
    expect(sent()).toBe(2);
  });

  it('Responses events (store: false), and finalResponse() of the helper', async () => {
    const body = { model: GPT, input: 'tell me', store: false, stream: true } as const;
    const first = await drain(await sb.responses.create(body));
    const again = await drain(await sb.responses.create(body));
    expect(sent()).toBe(1);
    expect(again.map((e) => e.type)).toEqual(first.map((e) => e.type));
    expect(again).toEqual(first);
    const helper = { model: GPT, input: 'helper', store: false } as const;
    const a = await sb.responses.stream(helper).finalResponse();
    // The helper builds its snapshot by changing the events it reads: the entry holds copies.
    const b = await sb.responses.stream(helper).finalResponse();
    expect(sent()).toBe(2);
    expect(b).toEqual(a);
    expect(b.status).toBe('completed');
  });

  it('Messages events, and finalMessage() of the helper', async () => {
    const first = await drain(
      await sb.messages.create(askClaude('hello claude', { stream: true })),
    );
    const again = await drain(
      await sb.messages.create(askClaude('hello claude', { stream: true })),
    );
    expect(sent()).toBe(1);
    expect(again).toEqual(first);
    expect(first.at(-1)?.type).toBe('message_stop');
    const a = await sb.messages.stream(askClaude('helper')).finalMessage();
    const b = await sb.messages.stream(askClaude('helper')).finalMessage();
    expect(sent()).toBe(2);
    expect(b).toEqual(a);
  });

  it("a streamed hit's asResponse() is SSE as the API writes it: event: lines, chat's [DONE]", async () => {
    /** Each SSE event as its fields: `event` (if any) and `data`. */
    const sse = async (response: Response) =>
      (await response.text())
        .split('\n\n')
        .filter((block) => block.trim() !== '')
        .map((block) => {
          const fields = Object.fromEntries(
            block
              .split('\n')
              .map((line) => [
                line.slice(0, line.indexOf(':')),
                line.slice(line.indexOf(':') + 1).trim(),
              ]),
          );
          return {
            event: fields.event,
            data: fields.data === '[DONE]' ? '[DONE]' : JSON.parse(fields.data!),
          };
        });
    const messages = askClaude('as sse', { stream: true });
    const first = await drain(await sb.messages.create(messages));
    const upstreamSse = await sse(
      await sb.messages.create({ ...messages, cache: false }).asResponse(),
    );
    const hit = await sb.messages.create(messages).asResponse();
    expect(hit.headers.get('x-switchboard-cache')).toBe('hit');
    const replayed = await sse(hit);
    // The SDK's stream never yields Claude's keep-alive `ping`: the entry holds what it yields.
    const yielded = upstreamSse.filter((e) => e.event !== 'ping');
    expect(replayed.map((e) => e.event)).toEqual(yielded.map((e) => e.event));
    expect(replayed.map((e) => e.data)).toEqual(first);
    const responses = { model: GPT, input: 'as sse', store: false, stream: true } as const;
    const events = await drain(await sb.responses.create(responses));
    const replayedResponses = await sse(await sb.responses.create(responses).asResponse());
    expect(replayedResponses.map((e) => e.event)).toEqual(events.map((e) => e.type));
    expect(replayedResponses.map((e) => e.data)).toEqual(events);
    const chat = ask('as sse', { stream: true });
    const chunks = await drain(await sb.chat.completions.create(chat));
    const replayedChat = await sse(await sb.chat.completions.create(chat).asResponse());
    expect(replayedChat.map((e) => e.data)).toEqual([...chunks, '[DONE]']);
    expect(replayedChat.every((e) => e.event === undefined)).toBe(true);
    expect(sent()).toBe(4);
  });

  it("the AI SDK's streamText through sb.fetch: the same text and finish reason, one request", async () => {
    const openai = createOpenAI({ apiKey: 'unused', fetch: sb.fetch });
    const run = async () => {
      const result = streamText({ model: openai.chat(GPT), prompt: 'one two three' });
      return { text: await result.text, finishReason: await result.finishReason };
    };
    const first = await run();
    const again = await run();
    expect(sent()).toBe(1);
    expect(again).toEqual(first);
    expect(first.finishReason).toBe('stop');
  });
});

describe('other operations', () => {
  it('parse() and embeddings are served again too, each from its own entries', async () => {
    const parsed = await sb.chat.completions.parse(ask('parse me'));
    expect(await sb.chat.completions.parse(ask('parse me'))).toEqual(parsed);
    // create() of the same body is another operation: its own entry.
    await sb.chat.completions.create(ask('parse me'));
    expect(sent()).toBe(2);
    const vectors = await sb.embeddings.create({ model: EMBED, input: ['one', 'two'] });
    const again = await sb.embeddings.create({ model: EMBED, input: ['one', 'two'] });
    expect(again).toEqual(vectors);
    expect(again.data[0]!.embedding.length).toBeGreaterThan(0);
    expect(sent()).toBe(3);
  });
});

describe('never kept, never served', () => {
  it('a stream its consumer left halfway, and one the upstream dropped', async () => {
    const stream = await sb.chat.completions.create(ask('long answer here', { stream: true }));
    for await (const _ of stream) break;
    upstream.deployment('plain').fail({ kind: 'drop-mid-stream', afterEvents: 2 });
    await expect(
      drain(await sb.chat.completions.create(ask('long answer here', { stream: true }))),
    ).rejects.toThrow();
    await drain(await sb.chat.completions.create(ask('long answer here', { stream: true })));
    expect(sent()).toBe(3);
  });

  it('a 429, a length finish, a content filter', async () => {
    upstream.deployment('plain').fail({ kind: 'status', status: 429, retryAfterMs: 1 });
    await expect(sb.chat.completions.create(ask('a'))).rejects.toThrow();
    // The 429 cooled 'plain': the next goes to the tier below it, upstream all the same.
    await sb.chat.completions.create(ask('a'));
    expect(sent()).toBe(2);
    const cut = await sb.chat.completions.create(ask('b c d e f g h', { max_tokens: 1 }));
    expect(cut.choices[0]!.finish_reason).toBe('length');
    await sb.chat.completions.create(ask('b c d e f g h', { max_tokens: 1 }));
    expect(sent()).toBe(4);
    upstream.deployment('plain').fail({ kind: 'content-filter', on: 'completion' });
    const filtered = await sb.chat.completions.create(ask('filtered'));
    expect(filtered.choices[0]!.finish_reason).toBe('content_filter');
    const fine = await sb.chat.completions.create(ask('filtered'));
    expect(fine.choices[0]!.finish_reason).toBe('stop');
    expect(sent()).toBe(6);
  });

  it('previous_response_id, and Responses calls that store (the default)', async () => {
    const stored = await sb.responses.create({ model: GPT, input: 'first turn' });
    await sb.responses.create({ model: GPT, input: 'first turn' });
    expect(sent()).toBe(2);
    const next = { model: GPT, input: 'second', previous_response_id: stored.id, store: false };
    await sb.responses.create(next);
    await sb.responses.create(next);
    expect(sent()).toBe(4);
  });
});

describe('isolation', () => {
  it('a call requiring eu is never answered from an entry made at a deployment without it', async () => {
    await sb.chat.completions.create(ask('where am I'));
    expect(upstream.deployment('plain').stats.requests).toBe(1);
    const eu = await sb.chat.completions.create(ask('where am I', { tags: ['eu'] })).withResponse();
    expect(eu.response.headers.get('x-switchboard-cache')).toBeNull();
    expect(upstream.deployment('eu').stats.requests).toBe(1);
    // The entry now comes from 'eu': a later eu call, and an untagged one, are answered from it.
    await sb.chat.completions.create(ask('where am I', { tags: ['eu'] }));
    await sb.chat.completions.create(ask('where am I'));
    expect(sent()).toBe(2);
  });

  it('two gateway keys (tenants) through sb.fetch: two requests; no-store and x-switchboard-cache: off', async () => {
    const post = (headers: Record<string, string>) =>
      sb.fetch('http://sb/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(ask('same words')),
      });
    expect(
      (await post({ 'x-switchboard-tenant': 'key-0' })).headers.get('x-switchboard-cache'),
    ).toBeNull();
    expect(
      (await post({ 'x-switchboard-tenant': 'key-1' })).headers.get('x-switchboard-cache'),
    ).toBeNull();
    const hit = await post({ 'x-switchboard-tenant': 'key-0' });
    expect(hit.headers.get('x-switchboard-cache')).toBe('hit');
    expect(sent()).toBe(2);
    await post({ 'x-switchboard-tenant': 'key-0', 'cache-control': 'no-store' });
    await post({ 'x-switchboard-tenant': 'key-0', 'x-switchboard-cache': 'off' });
    expect(sent()).toBe(4);
  });
});

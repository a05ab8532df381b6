import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { APIPromise as OpenAIAPIPromise } from 'openai/core/api-promise';
import { APIPromise as AnthropicAPIPromise } from '@anthropic-ai/sdk/core/api-promise';
import { ChatCompletionStream } from 'openai/lib/ChatCompletionStream';
import { MessageStream } from '@anthropic-ai/sdk/lib/MessageStream';
import { SwitchboardError } from 'nestjs-switchboard';
import { ask, askClaude, CLAUDE, GPT, rig, type Rig } from '../support/upstream';

const usage = (r: Rig, name: string, model: string) => {
  const s = r.sb.deployments.get(name)!.models.get(model)!;
  return { tokens: s.tpmUsage, requests: s.rpmUsage };
};

describe("the SDKs' APIPromise on every call", () => {
  let r: Rig;
  beforeEach(async () => {
    r = await rig({ openai: 2, anthropic: 2 });
  });
  afterEach(() => r.close());

  it('chat: await gives the data, withResponse() the response and request id, asResponse() the response', async () => {
    const promise = r.sb.chat.completions.create(ask('hello'));
    expect(promise).toBeInstanceOf(OpenAIAPIPromise);
    const { data, response, request_id } = await promise.withResponse();
    expect(data.choices[0]!.message.content).toContain('hello');
    expect(response.status).toBe(200);
    expect(request_id).toMatch(/^req_oai[01]_\d+$/);
    expect(request_id).toBe(response.headers.get('x-request-id'));
    expect((await promise).id).toBe(data.id);

    const raw = await r.sb.chat.completions.create(ask('raw')).asResponse();
    expect(raw.headers.get('x-request-id')).toMatch(/^req_oai[01]_/);
    // The switchboard read the body for its accounting: the copy carries the same JSON.
    expect(((await raw.json()) as { object: string }).object).toBe('chat.completion');
    expect(raw.headers.get('content-type')).toContain('application/json');
  });

  it('messages: withResponse() carries request-id, as the Anthropic SDK reads it', async () => {
    const promise = r.sb.messages.create(askClaude('hi'));
    expect(promise).toBeInstanceOf(AnthropicAPIPromise);
    const { data, response, request_id } = await promise.withResponse();
    expect(data.type).toBe('message');
    expect(request_id).toMatch(/^req_claude[01]_\d+$/);
    expect(request_id).toBe(response.headers.get('request-id'));
  });

  it('streams: withResponse() gives the SDK Stream and the response', async () => {
    const { data: stream, response } = await r.sb.chat.completions
      .create(ask('stream', { stream: true }))
      .withResponse();
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toContain('stream');
  });

  it('parse: messages.parse() has withResponse() too', async () => {
    const { zodOutputFormat } = await import('@anthropic-ai/sdk/helpers/zod');
    const { z } = await import('zod');
    const { data, request_id } = await r.sb.messages
      .parse({
        ...askClaude('json please'),
        output_config: { format: zodOutputFormat(z.object({ answer: z.string() })) },
      })
      .withResponse();
    expect(typeof data.parsed_output?.answer).toBe('string');
    expect(request_id).toMatch(/^req_claude/);
  });

  it('the response is the one of the attempt that succeeded, after a failover', async () => {
    const first = r.sb.selectDeployment({ model: GPT, sessionId: 's' }).name;
    const other = first === 'oai0' ? 'oai1' : 'oai0';
    r.upstream.deployment(first).fail({ kind: 'status', status: 429, retryAfterMs: 1_000 });
    const { response, request_id } = await r.sb.chat.completions
      .create(ask('again', { session_id: 's' }))
      .withResponse();
    expect(response.status).toBe(200);
    expect(request_id).toMatch(new RegExp(`^req_${other}_`));

    const claude = r.sb.selectDeployment({ model: CLAUDE, sessionId: 'c' }).name;
    r.upstream.deployment(claude).fail({ kind: 'status', status: 503 });
    const raw = await r.sb.messages.create(askClaude('x', { session_id: 'c' })).asResponse();
    expect(raw.status).toBe(200);
    expect(raw.headers.get('request-id')).not.toMatch(new RegExp(`^req_${claude}_`));
  });

  it('an error of the switchboard rejects the APIPromise and its helpers alike', async () => {
    const p = r.sb.chat.completions.create({ model: 'nope', messages: [] });
    expect(p).toBeInstanceOf(OpenAIAPIPromise);
    await expect(p).rejects.toBeInstanceOf(SwitchboardError);
    await expect(p.withResponse()).rejects.toBeInstanceOf(SwitchboardError);
    await expect(p.asResponse()).rejects.toBeInstanceOf(SwitchboardError);
  });

  it('SDK errors still pass through unchanged', async () => {
    r.upstream.deployments.forEach((d) => d.fail({ kind: 'status', status: 400 }, Infinity));
    await expect(r.sb.chat.completions.create(ask('x')).withResponse()).rejects.toBeInstanceOf(
      OpenAI.BadRequestError,
    );
    await expect(r.sb.messages.create(askClaude('x')).asResponse()).rejects.toBeInstanceOf(
      Anthropic.BadRequestError,
    );
  });
});

describe("the SDKs' helper streams", () => {
  let r: Rig;
  beforeEach(async () => {
    // Uncapped calls charged no reservation: usage is what the upstream counted.
    r = await rig({
      openai: 1,
      anthropic: 1,
      quota: { tpm: 30_000, rpm: 300, outputReservation: 0 },
    });
  });
  afterEach(() => r.close());

  it('chat.completions.stream(): the SDK ChatCompletionStream, balanced and accounted', async () => {
    const stream = r.sb.chat.completions.stream(ask('helper stream'));
    expect(stream).toBeInstanceOf(ChatCompletionStream);
    let content = '';
    stream.on('content', (delta) => (content += delta));
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe(content);
    expect(content).toContain('helper stream');
    expect(usage(r, 'oai0', GPT)).toEqual({
      tokens: r.upstream.deployment('oai0').stats.totalTokens,
      requests: 1,
    });
  });

  it('chat.completions.stream() keeps the usage chunk hidden and session_id out of the body', async () => {
    const stream = r.sb.chat.completions.stream(ask('no usage', { session_id: 'x' }));
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    stream.on('chunk', (c) => chunks.push(c));
    await stream.done();
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.every((c) => c.choices.length > 0)).toBe(true);
    expect(r.sb.selectDeployment({ model: GPT, sessionId: 'x' }).name).toBe('oai0');
  });

  it("messages.stream(): the SDK MessageStream, .on('text') and finalMessage()", async () => {
    const stream = r.sb.messages.stream(askClaude('claude helper'));
    expect(stream).toBeInstanceOf(MessageStream);
    let text = '';
    stream.on('text', (delta) => (text += delta));
    const final = await stream.finalMessage();
    expect(text).toContain('claude helper');
    expect(final.content[0]).toMatchObject({ type: 'text', text });
    expect(usage(r, 'claude0', CLAUDE)).toEqual({
      tokens: final.usage.input_tokens + final.usage.output_tokens,
      requests: 1,
    });
    const { request_id } = await stream.withResponse();
    expect(request_id).toMatch(/^req_claude0_/);
  });

  it('a helper stream fails over like any call', async () => {
    const o = await rig({ openai: 2 });
    try {
      const first = o.sb.selectDeployment({ model: GPT, sessionId: 's' }).name;
      o.upstream.deployment(first).fail({ kind: 'status', status: 429, retryAfterMs: 1_000 });
      const final = await o.sb.chat.completions
        .stream(ask('over', { session_id: 's' }))
        .finalChatCompletion();
      expect(final.choices[0]!.message.content).toContain('over');
    } finally {
      await o.close();
    }
  });

  it('an abort of the helper stream reaches the request', async () => {
    const stream = r.sb.messages.stream(askClaude('abort me '.repeat(50)));
    stream.on('text', () => stream.abort());
    await expect(stream.finalMessage()).rejects.toBeInstanceOf(Anthropic.APIUserAbortError);
  });
});

import type OpenAI from 'openai';
import type Anthropic from '@anthropic-ai/sdk';
import { zodResponseFormat } from 'openai/helpers/zod';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import { z } from 'zod';
import { SwitchboardError } from 'nestjs-switchboard';
import { ask, askClaude, CLAUDE, GPT, requestCounts, rig, type Rig } from '../support/upstream';

describe('calls through the real SDKs', () => {
  let r: Rig;
  beforeAll(async () => {
    // A queue: a cold deployment ramps its requests up (a burst of 20 at once is paced, not refused).
    r = await rig({ openai: 2, anthropic: 2, queue: { maxWait: 10_000 } });
  });
  afterAll(() => r.close());

  it('chat completion', async () => {
    const c = await r.sb.chat.completions.create(ask('Hello, world!'));
    expect(c.object).toBe('chat.completion');
    expect(c.choices[0]!.message.content).toContain('Hello, world!');
    expect(c.usage!.total_tokens).toBeGreaterThan(0);
  });

  it('chat completion stream, assembled, with the usage chunk hidden unless asked for', async () => {
    const stream = await r.sb.chat.completions.create(ask('Stream me please', { stream: true }));
    let text = '';
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.choices.length).toBeGreaterThan(0);
      text += chunk.choices[0]!.delta.content ?? '';
    }
    expect(chunks).toBeGreaterThan(1);
    expect(text).toContain('Stream me please');

    const asked = await r.sb.chat.completions.create(
      ask('With usage', { stream: true, stream_options: { include_usage: true } }),
    );
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of asked) usage = chunk.usage ?? usage;
    expect(usage?.total_tokens).toBeGreaterThan(0);
  });

  it('returns the SDK Stream class, so tee() and toReadableStream() work', async () => {
    const { Stream } = await import('openai/streaming');
    const stream = await r.sb.chat.completions.create(ask('tee', { stream: true }));
    expect(stream).toBeInstanceOf(Stream);
    const [a, b] = stream.tee();
    const read = async (s: typeof a) => {
      let t = '';
      for await (const c of s) t += c.choices[0]?.delta.content ?? '';
      return t;
    };
    const [ta, tb] = await Promise.all([read(a), read(b)]);
    expect(ta).toBe(tb);
    expect(ta).toContain('tee');
  });

  it('chat parse with zodResponseFormat', async () => {
    const Answer = z.object({ city: z.string(), population: z.number(), capital: z.boolean() });
    const c = await r.sb.chat.completions.parse({
      model: GPT,
      messages: [{ role: 'user', content: 'Largest city?' }],
      response_format: zodResponseFormat(Answer, 'answer'),
    });
    const parsed = c.choices[0]!.message.parsed!;
    expect(Answer.parse(parsed)).toEqual(parsed);
    expect(typeof parsed.city).toBe('string');
  });

  it('messages create', async () => {
    const m = await r.sb.messages.create(askClaude('Hello, Claude'));
    expect(m.type).toBe('message');
    expect(m.content[0]).toMatchObject({ type: 'text' });
    expect((m.content[0] as Anthropic.TextBlock).text).toContain('Hello, Claude');
    expect(m.usage.input_tokens + m.usage.output_tokens).toBeGreaterThan(0);
  });

  it('messages stream, assembled from the real event sequence', async () => {
    const stream = await r.sb.messages.create(askClaude('Stream from Claude', { stream: true }));
    const types: string[] = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') {
        text += event.delta.text;
      }
    }
    expect(types[0]).toBe('message_start');
    expect(types).toContain('message_delta');
    expect(types.at(-1)).toBe('message_stop');
    expect(text).toContain('Stream from Claude');
  });

  it('messages parse with zodOutputFormat', async () => {
    const Answer = z.object({ answer: z.number(), reasoning: z.string() });
    const m = await r.sb.messages.parse({
      model: CLAUDE,
      max_tokens: 256,
      messages: [{ role: 'user', content: 'What is 2+2?' }],
      output_config: { format: zodOutputFormat(Answer) },
    });
    expect(Answer.parse(m.parsed_output)).toEqual(m.parsed_output);
  });

  it('routes chat calls only to OpenAI deployments and messages calls only to Anthropic ones', async () => {
    r.upstream.deployments.forEach((d) => d.resetStats());
    await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => r.sb.chat.completions.create(ask(`c${i}`))),
      ...Array.from({ length: 20 }, (_, i) => r.sb.messages.create(askClaude(`m${i}`))),
    ]);
    for (const d of r.upstream.deployments) {
      const apis = new Set(d.requests.slice(-d.stats.requests).map((q) => q.api));
      expect([...apis]).toEqual(d.name.startsWith('oai') ? ['chat'] : ['messages']);
    }
    const counts = requestCounts(r.upstream);
    expect(counts.oai0! + counts.oai1!).toBe(20);
    expect(counts.claude0! + counts.claude1!).toBe(20);
  });

  it('sends the Foundry key as x-api-key, an OpenAI key as a bearer token', async () => {
    await r.sb.messages.create(askClaude('auth', { session_id: 'auth' }));
    const claude = r.upstream.deployment(
      r.sb.selectDeployment({ model: CLAUDE, sessionId: 'auth' }).name,
    );
    const last = claude.requests.at(-1)!;
    expect(last.headers['x-api-key']).toBe(`foundry-${claude.name}`);
    expect(last.headers.authorization).toBeUndefined();

    await r.sb.chat.completions.create(ask('auth', { session_id: 'auth-oai' }));
    const oai = r.upstream.deployment(
      r.sb.selectDeployment({ model: GPT, sessionId: 'auth-oai' }).name,
    );
    expect(oai.requests.at(-1)!.headers.authorization).toBe(`Bearer sk-${oai.name}`);
  });

  it('passes request options through: headers reach the upstream', async () => {
    await r.sb.chat.completions.create(ask('headers', { session_id: 'h' }), {
      headers: { 'x-request-echo': 'abc-123' },
    });
    const d = r.upstream.deployment(r.sb.selectDeployment({ model: GPT, sessionId: 'h' }).name);
    expect(d.requests.at(-1)!.headers['x-request-echo']).toBe('abc-123');
    expect((d.requests.at(-1)!.body as Record<string, unknown>).session_id).toBeUndefined();
  });

  it('rejects a call on the wrong API for a model with a SwitchboardError', async () => {
    await expect(r.sb.chat.completions.create(ask('x', { model: CLAUDE }))).rejects.toThrow(
      SwitchboardError,
    );
    await expect(r.sb.chat.completions.create(ask('x', { model: CLAUDE }))).rejects.toThrow(
      /claude-sonnet-5 is served by anthropic deployments only .* use sb\.messages\.create\(\)/,
    );
    await expect(r.sb.messages.create(askClaude('x', { model: GPT }))).rejects.toThrow(
      /use sb\.chat\.completions\.create\(\)/,
    );
  });

  it('rejects an unknown model', async () => {
    await expect(r.sb.chat.completions.create(ask('x', { model: 'gpt-9' }))).rejects.toThrow(
      /No deployments available for gpt-9/,
    );
  });
});

describe('Entra ID tokens', () => {
  it('calls the token function per request and sends its token as a bearer token', async () => {
    const { SimulatedUpstream } = await import('../../src/testing');
    const { createSwitchboard } = await import('../../src');
    const upstream = await SimulatedUpstream.start({ deployments: [{ name: 'f' }, { name: 'o' }] });
    let n = 0;
    const token = async () => `token-${++n}`;
    const sb = createSwitchboard({
      deployments: [
        {
          provider: 'anthropic',
          name: 'f',
          baseURL: upstream.deployment('f').anthropicBaseURL,
          apiKey: token,
          models: [{ name: CLAUDE }],
        },
        {
          provider: 'openai',
          name: 'o',
          baseURL: upstream.deployment('o').openaiBaseURL,
          apiKey: token,
          models: [{ name: GPT }],
        },
      ],
    });
    try {
      await sb.messages.create(askClaude('hi'));
      await sb.chat.completions.create(ask('hi'));
      expect(upstream.deployment('f').requests.at(-1)!.headers.authorization).toBe(
        'Bearer token-1',
      );
      expect(upstream.deployment('o').requests.at(-1)!.headers.authorization).toBe(
        'Bearer token-2',
      );
    } finally {
      await sb.close();
      await upstream.close();
    }
  });
});

// The switchboard from the packed tarball, in an application on today's majors. Run with
// `node --test` after `tsc` (skipLibCheck false): the types below are the application's own
// imports, so a type from another copy of an SDK fails the compile, and an error or stream from
// another copy fails the instanceof checks.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import type { Message, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import { Stream as AnthropicStream } from '@anthropic-ai/sdk/streaming';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import OpenAI from 'openai';
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import { Stream as OpenAIStream } from 'openai/streaming';
import {
  SWITCHBOARD_CONFIG_ENV,
  Switchboard,
  SwitchboardError,
  createSwitchboard,
  redisState,
} from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { AppModule } from './app.module.js';

const hello = [{ role: 'user' as const, content: 'Hello!' }];

describe(`nestjs-switchboard in a ${typeof require === 'function' ? 'CommonJS' : 'ESM'} app`, () => {
  let upstream: SimulatedUpstream;
  let app: INestApplication;
  let sb: Switchboard;
  let dir: string;

  before(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'aoai' }, { name: 'foundry' }],
    });
    dir = mkdtempSync(join(tmpdir(), 'switchboard-compat-'));
    const file = join(dir, 'switchboard.yaml');
    writeFileSync(
      file,
      [
        'deployments:',
        '  - { provider: openai, name: aoai, baseURL: "${AOAI_URL}", apiKey: k, models: [{ name: gpt-4o-mini }] }',
        '  - { provider: anthropic, name: foundry, baseURL: "${FOUNDRY_URL}", apiKey: k, models: [{ name: claude-sonnet-5 }] }',
        '',
      ].join('\n'),
    );
    process.env[SWITCHBOARD_CONFIG_ENV] = file;
    process.env.AOAI_URL = upstream.deployment('aoai').openaiBaseURL;
    process.env.FOUNDRY_URL = upstream.deployment('foundry').anthropicBaseURL;
    app = await NestFactory.create(AppModule, { logger: false });
    await app.listen(0, '127.0.0.1');
    sb = app.get(Switchboard);
  });

  after(async () => {
    await app?.close();
    await upstream?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers chat completions, plain and streamed, with the app’s own types and classes', async () => {
    const completion: ChatCompletion = await sb.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: hello,
    });
    assert.match(completion.choices[0]?.message.content ?? '', /Hello/);

    const stream: OpenAIStream<ChatCompletionChunk> = await sb.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: hello,
      stream: true,
    });
    assert.ok(stream instanceof OpenAIStream, 'the stream is the app’s own openai Stream');
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    assert.match(text, /Hello/);
  });

  it('answers messages, plain and streamed, with the app’s own types and classes', async () => {
    const message: Message = await sb.messages.create({
      model: 'claude-sonnet-5',
      max_tokens: 64,
      messages: hello,
    });
    assert.equal(message.content[0]?.type, 'text');

    const stream: AnthropicStream<RawMessageStreamEvent> = await sb.messages.create({
      model: 'claude-sonnet-5',
      max_tokens: 64,
      messages: hello,
      stream: true,
    });
    assert.ok(stream instanceof AnthropicStream, 'the stream is the app’s own Anthropic Stream');
    const types = new Set<string>();
    for await (const event of stream) types.add(event.type);
    assert.ok(types.has('message_stop'));
  });

  it('reports health through Terminus', async () => {
    const res = await fetch(`${await app.getUrl()}/health`);
    const body = (await res.json()) as { status: string; info?: Record<string, unknown> };
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.status, 'ok');
    assert.ok(body.info?.llm, JSON.stringify(body));
  });

  it('passes upstream errors through as the app’s own SDK error classes', async () => {
    upstream.deployment('aoai').fail({ kind: 'status', status: 429, retryAfterMs: 20 });
    const openaiError = await sb.chat.completions
      .create({ model: 'gpt-4o-mini', messages: hello })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    assert.ok(openaiError instanceof OpenAI.RateLimitError, `got ${String(openaiError)}`);
    assert.ok(openaiError instanceof OpenAI.APIError);
    const status: number = openaiError.status;
    assert.equal(status, 429);

    upstream.deployment('foundry').fail({ kind: 'status', status: 500 });
    const anthropicError = await sb.messages
      .create({ model: 'claude-sonnet-5', max_tokens: 64, messages: hello })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    assert.ok(
      anthropicError instanceof Anthropic.InternalServerError,
      `got ${String(anthropicError)}`,
    );

    await assert.rejects(
      sb.chat.completions.create({ model: 'nobody-serves-this', messages: hello }),
      SwitchboardError,
    );
  });

  it('runs standalone with ioredis for shared state, carrying on while Redis is unreachable', async () => {
    const standalone = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'aoai',
          baseURL: upstream.deployment('aoai').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: 'gpt-4o-mini' }],
        },
      ],
      // Port 9 (discard) on loopback: nothing listens, the store reports itself degraded.
      state: redisState({ url: 'redis://127.0.0.1:9', timeout: 50 }),
      logger: { log() {}, warn() {}, error() {} },
    });
    const completion = await standalone.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: hello,
    });
    assert.ok(completion.choices.length > 0);
    await standalone.close();
  });
});

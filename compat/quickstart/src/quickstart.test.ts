// The README's quick start in a fresh Nest 11 app, on the packed tarball: its blocks were copied
// as they are (switchboard.yaml, .env, src/chat.controller.ts, src/app.module.ts), no endpoint or
// key is set, and `SWITCHBOARD_SIMULATE=1` in .env serves every deployment. Run from the app's
// folder (ConfigModule reads ./.env) with `node --test dist/quickstart.test.js`.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { AppModule } from './app.module';
import { ApisController } from './apis.controller';
import { HealthController } from './health.controller';

// No endpoint and no key: the simulation is all there is (.env, read when app.module loaded).
for (const key of Object.keys(process.env)) {
  if (/^(AZURE_OPENAI|FOUNDRY)_/.test(key)) delete process.env[key];
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("the README's quick start, offline", () => {
  it("`npm run start`, then `curl 'localhost:3000/chat?q=Hello'`: the simulation echoes", async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [join(__dirname, 'main.js')], {
      env: { ...process.env, PORT: String(port) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      let answer: string | undefined;
      for (let i = 0; i < 300 && answer === undefined && child.exitCode === null; i++) {
        answer = await fetch(`http://localhost:${port}/chat?q=Hello`).then(
          (r) => r.text(),
          () => new Promise<undefined>((resolve) => setTimeout(resolve, 100)),
        );
      }
      assert.equal(child.exitCode, null, `the app ended: ${stderr}`);
      assert.match(answer ?? '', /Hello/);
    } finally {
      child.kill();
    }
  });
});

@Module({
  imports: [AppModule, TerminusModule],
  controllers: [ApisController, HealthController],
})
class QuickstartModule {}

describe('the same app, answering every API through the injected Switchboard', () => {
  let app: INestApplication;
  let url: string;
  const get = async (path: string, init?: RequestInit) => {
    const res = await fetch(`${url}${path}`, init);
    return { status: res.status, text: await res.text() };
  };

  before(async () => {
    // abortOnError false: a failure to start is this test's failure, not a silent exit.
    app = await NestFactory.create(QuickstartModule, { logger: false, abortOnError: false });
    await app.listen(0, '127.0.0.1');
    url = await app.getUrl();
  });
  after(() => app.close());

  it('chat, streamed chat, messages, responses and embeddings', async () => {
    const chat = await get('/chat?q=plain');
    assert.equal(chat.status, 200);
    assert.match(chat.text, /plain/);
    const streamed = await get('/apis/stream?q=streamed');
    assert.equal(streamed.status, 200);
    assert.match(streamed.text, /streamed/);
    const claude = await get('/apis/messages?q=Hello%2C%20Claude');
    assert.equal(claude.status, 200);
    assert.match(claude.text, /Hello, Claude/);
    const response = await get('/apis/responses?q=responded');
    assert.equal(response.status, 200);
    assert.match(response.text, /responded/);
    const embedding = await get('/apis/embeddings?q=vector');
    assert.equal(embedding.status, 200);
    assert.ok(Number(embedding.text) > 0, embedding.text);
  });

  it("readiness stays 200 with gpt-4o-mini's deployments all down and Claude healthy", async () => {
    assert.equal((await get('/health/ready')).status, 200);
    const down = await get('/apis/down?model=gpt-4o-mini', { method: 'POST' });
    assert.deepEqual(JSON.parse(down.text), ['aoai-eastus']);
    const ready = await get('/health/ready');
    assert.equal(ready.status, 200, ready.text);
    const models = JSON.parse(ready.text).info.switchboard.models;
    assert.equal(models['gpt-4o-mini'].healthy, 0);
    assert.equal(models['claude-sonnet-5'].healthy, 1);
  });
});

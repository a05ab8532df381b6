/**
 * Run in a child process by shutdown.spec.ts: `node -r ./test/support/ts-register.js
 * shutdown-child.ts <standalone|nest>`. Starts a simulated upstream and a switchboard (alone, or
 * in a Nest application), puts calls in flight (plain, streamed and being read, streamed and
 * never read), closes the switchboard (or the application) and then the upstream, and prints one
 * JSON line with what every call became. It never calls `process.exit`: the parent checks that
 * the process ends by itself.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  createSwitchboard,
  Switchboard,
  SwitchboardModule,
  type SwitchboardOptions,
} from '../../src';
import { SimulatedUpstream } from '../../src/testing';
import { CLAUDE, GPT, oaiAndClaude } from '../support/upstream';

const LONG = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');

type Outcome = { call: string; result: 'fulfilled' | 'rejected'; detail: string };

async function main(mode: string): Promise<void> {
  const upstream = await SimulatedUpstream.start({
    deployments: [
      { name: 'oai', latency: 300, chunkDelay: 20 },
      { name: 'claude', latency: 300, chunkDelay: 20 },
    ],
  });
  const options: SwitchboardOptions = {
    // A fixed window: the usage-reset timer runs (the sliding default needs none).
    usageWindow: 'fixed',
    logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    deployments: oaiAndClaude(
      upstream,
      { tpm: 100_000, rpm: 1_000 },
      { oai: 'k', claude: () => Promise.resolve('token') },
    ),
  };

  let sb: Switchboard;
  let close: () => Promise<void>;
  if (mode === 'nest') {
    @Module({ imports: [SwitchboardModule.forRoot(options)] })
    class AppModule {}
    const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
    sb = app.get(Switchboard);
    close = () => app.close();
  } else {
    sb = createSwitchboard(options);
    close = () => sb.close();
  }

  const outcomes: Outcome[] = [];
  const track = (call: string, promise: Promise<unknown>) =>
    promise.then(
      (value) => outcomes.push({ call, result: 'fulfilled', detail: String(value).slice(0, 40) }),
      (error: unknown) =>
        outcomes.push({ call, result: 'rejected', detail: (error as Error)?.constructor?.name }),
    );
  const read = async (stream: Promise<AsyncIterable<unknown>>) => {
    let events = 0;
    for await (const _ of await stream) events++;
    return `${events} events`;
  };

  const calls = [
    track(
      'chat',
      sb.chat.completions.create({ model: GPT, messages: [{ role: 'user', content: 'a' }] }),
    ),
    track(
      'messages',
      sb.messages.create({
        model: CLAUDE,
        max_tokens: 64,
        messages: [{ role: 'user', content: 'b' }],
      }),
    ),
    track(
      'chat stream, read',
      read(
        sb.chat.completions.create({
          model: GPT,
          stream: true,
          messages: [{ role: 'user', content: LONG }],
        }),
      ),
    ),
    track(
      'messages stream, read',
      read(
        sb.messages.create({
          model: CLAUDE,
          max_tokens: 256,
          stream: true,
          messages: [{ role: 'user', content: LONG }],
        }),
      ),
    ),
    // Obtained and never read: its connection stays open until the upstream closes it.
    track(
      'chat stream, unread',
      sb.chat.completions.create({
        model: GPT,
        stream: true,
        messages: [{ role: 'user', content: LONG }],
      }),
    ),
  ];
  await Promise.all(upstream.deployments.map((d) => d.waitFor((x) => x.stats.requests >= 2)));

  const before = process.getActiveResourcesInfo();
  await close();
  await close(); // idempotent
  await Promise.race([
    Promise.all(calls.slice(0, 4)),
    new Promise((resolve) => setTimeout(resolve, 10_000).unref()),
  ]);
  // A call after close.
  await track(
    'after close',
    sb.chat.completions.create({ model: GPT, messages: [{ role: 'user', content: 'c' }] }),
  );
  await upstream.close();
  await Promise.all(calls);
  const after = process.getActiveResourcesInfo();
  process.stdout.write(`${JSON.stringify({ outcomes, before, after, done: Date.now() })}\n`);
}

process.on('unhandledRejection', (reason) => {
  process.stderr.write(`unhandledRejection: ${String(reason)}\n`);
  process.exitCode = 3;
});
void main(process.argv[2] ?? 'standalone');

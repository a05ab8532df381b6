/**
 * What 20 000 calls cost while every deployment of their model refuses connections: connection
 * attempts (undici's diagnostics channel), how the calls ended, and the heap after `close()`
 * against the heap before the switchboard was built (both after a full GC). Two OpenAI
 * deployments on ports nothing listens on; calls in concurrent batches (default 1 000) on the real
 * clock. The calls of the first batch are all sent before the first refusal comes back: they are
 * connection attempts whatever the switchboard does; a batch of 1 shows the bound alone.
 *
 * `node --expose-gc -r ts-node/register/transpile-only bench/unreachable.ts [calls] [batch]`
 */
import { subscribe } from 'node:diagnostics_channel';
import { createSwitchboard, SwitchboardError } from '../src';
import { deadPort } from '../test/support/dead-port';

/** Heap in use after a full collection, in MB. */
async function heapMb(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage().heapUsed / 1e6;
}

async function main(): Promise<void> {
  const calls = Number(process.argv[2] ?? 20_000);
  const size = Number(process.argv[3] ?? 1_000);
  const ports = [await deadPort(), await deadPort()];
  let attempts = 0;
  subscribe('undici:client:beforeConnect', (message) => {
    const port = Number((message as { connectParams?: { port?: unknown } }).connectParams?.port);
    if (ports.includes(port)) attempts++;
  });
  const before = await heapMb();
  const sb = createSwitchboard({
    logger: { log: () => {}, warn: (m: string) => console.error(m), error: () => {} },
    deployments: ports.map((port, i) => ({
      provider: 'openai' as const,
      name: `d${i}`,
      baseURL: `http://127.0.0.1:${port}/d${i}/openai/v1/`,
      apiKey: `sk-${i}`,
      models: [{ name: 'gpt-4o-mini' }],
    })),
  });
  const ended = { unavailable: 0, other: 0 };
  const started = process.hrtime.bigint();
  for (let sent = 0; sent < calls; sent += size) {
    const batch = Array.from({ length: Math.min(size, calls - sent) }, (_, i) =>
      sb.chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `c${sent + i}` }] })
        .then(
          () => ended.other++,
          (e: unknown) => (e instanceof SwitchboardError ? ended.unavailable++ : ended.other++),
        ),
    );
    await Promise.all(batch);
  }
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  await sb.close();
  const after = await heapMb();
  console.log(
    JSON.stringify({
      calls,
      batch: size,
      connectionAttempts: attempts,
      ...ended,
      ms: Math.round(ms),
      heapBeforeMb: +before.toFixed(2),
      heapAfterCloseMb: +after.toFixed(2),
      heapDeltaMb: +(after - before).toFixed(2),
    }),
  );
}

void main();

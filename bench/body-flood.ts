/**
 * What ten unauthenticated 19 MB bodies cost the sample gateway: its RSS growth and how long
 * `/health` takes meanwhile. A gateway child (`bench/gateway-child.ts`, with a key set, on its
 * simulated deployments) gets ten such bodies at once, sent whole, to a path that does not exist
 * (declared length) and then to `/v1/chat/completions` (chunked, no key); its RSS is read from
 * `/proc` as they go, and `/health` is asked in a loop.
 *
 * `node -r ts-node/register/transpile-only bench/body-flood.ts [express|fastify]`
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';

const BODIES = 10;
/** A 19 MB JSON array of empty objects: the costliest shape for a JSON parser per byte. */
const BODY = Buffer.from(`[${Array.from({ length: 6_300_000 }, () => '{}').join(',')}]`);

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

/** One POST of the whole body; resolves with the status once answered (or 0 when cut off). */
function flood(port: number, path: string, chunked: boolean): Promise<number> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (!chunked) headers['content-length'] = String(BODY.length);
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers });
    let status = 0;
    req.on('response', (res) => {
      status = res.statusCode ?? 0;
      res.resume();
      res.on('end', () => resolve(status));
    });
    // Cut off once answered: what an attacker's client sees then is no concern here.
    req.on('error', () => resolve(status));
    if (!chunked) {
      req.end(BODY);
      return;
    }
    for (let at = 0; at < BODY.length; at += 1 << 20) req.write(BODY.subarray(at, at + (1 << 20)));
    req.end();
  });
}

function health(port: number): Promise<number> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/health' }, (res) => {
      res.resume();
      res.on('end', () => resolve(performance.now() - started));
    });
    req.on('error', () => resolve(performance.now() - started));
    req.end();
  });
}

async function round(pid: number, port: number, path: string, chunked: boolean): Promise<void> {
  const before = rssMb(pid);
  let peak = before;
  let slowest = 0;
  let done = false;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 20);
  const prober = (async () => {
    while (!done) slowest = Math.max(slowest, await health(port));
  })();
  const started = performance.now();
  const statuses = await Promise.all(
    Array.from({ length: BODIES }, () => flood(port, path, chunked)),
  );
  const took = performance.now() - started;
  done = true;
  await prober;
  clearInterval(sampler);
  peak = Math.max(peak, rssMb(pid));
  process.stdout.write(
    `${BODIES} x ${(BODY.length / 1e6).toFixed(1)} MB to ${path}${chunked ? ' (chunked)' : ''}: ` +
      `statuses ${[...new Set(statuses)].join(',')}, all answered in ${took.toFixed(0)} ms, ` +
      `RSS ${before.toFixed(0)} -> peak ${peak.toFixed(0)} MB (+${(peak - before).toFixed(0)}), ` +
      `slowest /health ${slowest.toFixed(0)} ms\n`,
  );
}

async function main(): Promise<void> {
  const platform = process.argv[2] === 'fastify' ? 'fastify' : 'express';
  const child = spawn(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', join(__dirname, 'gateway-child.ts'), 'gateway'],
    {
      env: { ...process.env, GATEWAY_API_KEYS: 'bench-key', GATEWAY_PLATFORM: platform },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const ready = /READY (\d+)/.exec(out);
      if (ready) resolve(Number(ready[1]));
    });
    child.once('exit', () => reject(new Error('the gateway exited before it was ready')));
  });
  process.stdout.write(`${platform}, gateway pid ${child.pid}\n`);
  try {
    await health(port);
    await round(child.pid!, port, '/no-such-route', false);
    await round(child.pid!, port, '/v1/chat/completions', true);
  } finally {
    child.kill('SIGTERM');
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

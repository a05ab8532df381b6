/**
 * How long one authenticated body of the allowed size can hold the sample gateway's event loop:
 * each of the costliest shapes the body scan lets through (and the nested one it refuses) is
 * posted to `/v1/chat/completions` of a gateway child (`bench/gateway-child.ts`, a key set, its
 * simulated deployments), one at a time, while `/health/live` is asked in a loop; the slowest
 * `/health/live` per body is what a probe would have seen.
 *
 * `node -r ts-node/register/transpile-only bench/body-shape.ts [rounds]`
 */
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { MAX_BODY_CONTAINERS, MAX_BODY_VALUES } from '../src/relay/body-checks';

const KEY = 'bench-key';
const SIZE = 20_000_000;

/** A chat body for `model` whose `metadata` is `filler`, padded with a string to about 20 MB. */
function body(model: string, filler: string): Buffer {
  const head = `{"model":"${model}","messages":[{"role":"user","content":"hi"}],"metadata":{"v":${filler},"pad":"`;
  const tail = '"}}';
  const pad = Math.max(0, SIZE - head.length - tail.length);
  return Buffer.from(head + 'x'.repeat(pad) + tail);
}

const SHAPES: Record<string, (model: string) => Buffer> = {
  'nested 10 M deep (refused)': () =>
    Buffer.from(`{"model":"m","metadata":${'['.repeat(9_999_000)}${']'.repeat(9_999_000)}}`),
  [`${MAX_BODY_VALUES - 10} zeros`]: (m) => body(m, `[${'0,'.repeat(MAX_BODY_VALUES - 11)}0]`),
  [`${MAX_BODY_CONTAINERS - 10} empty objects`]: (m) =>
    body(m, `[${'{},'.repeat(MAX_BODY_CONTAINERS - 11)}{}]`),
  [`${MAX_BODY_CONTAINERS - 10} objects of 8 keys`]: (m) =>
    body(
      m,
      `[${'{"a":0,"b":0,"c":0,"d":0,"e":0,"f":0,"g":0,"h":0},'.repeat(MAX_BODY_CONTAINERS - 11)}{}]`,
    ),
  'one 20 MB string': (m) => body(m, '0'),
};

function post(port: number, payload: Buffer): Promise<number> {
  return new Promise((resolve) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/v1/chat/completions',
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': String(payload.length),
        authorization: `Bearer ${KEY}`,
      },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.end(payload);
  });
}

function live(port: number): Promise<number> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/health/live' }, (res) => {
      res.resume();
      res.on('end', () => resolve(performance.now() - started));
    });
    req.on('error', () => resolve(performance.now() - started));
    req.end();
  });
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 3);
  const child = spawn(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', join(__dirname, 'gateway-child.ts'), 'gateway'],
    { env: { ...process.env, GATEWAY_API_KEYS: KEY }, stdio: ['ignore', 'pipe', 'inherit'] },
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
  try {
    await live(port);
    for (const [name, make] of Object.entries(SHAPES)) {
      for (const model of ['no-such-model', 'gpt-4o-mini']) {
        const payload = make(model);
        const slowest: number[] = [];
        const statuses = new Set<number>();
        for (let r = 0; r < rounds; r++) {
          let done = false;
          let worst = 0;
          const prober = (async () => {
            while (!done) worst = Math.max(worst, await live(port));
          })();
          statuses.add(await post(port, payload));
          done = true;
          await prober;
          slowest.push(worst);
        }
        process.stdout.write(
          `${name}, model ${model} (${(payload.length / 1e6).toFixed(1)} MB): ` +
            `status ${[...statuses].join(',')}, slowest /health/live per round ` +
            `${slowest.map((ms) => ms.toFixed(0)).join(' / ')} ms\n`,
        );
        if (name.includes('refused')) break;
      }
    }
  } finally {
    child.kill('SIGTERM');
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

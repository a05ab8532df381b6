/**
 * A gateway process of the gateway section, started by `bench/gateway.ts`: `gateway` (the sample
 * gateway, configured by `SWITCHBOARD_CONFIG`) or `floor` (a bare round-robin proxy: `node:http`
 * with a keep-alive agent, no parsing). Listens on 127.0.0.1 on a free port, prints
 * `READY <port>` and runs until killed.
 *
 * `node -r ts-node/register/transpile-only bench/gateway-child.ts floor <upstream base URL>...`
 */
import { Agent, createServer, request } from 'node:http';
import Module from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

async function floor(targets: string[]): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const upstreams = targets.map((t) => new URL(t));
  let next = 0;
  const server = createServer((req, res) => {
    const to = upstreams[next++ % upstreams.length]!;
    const path = to.pathname.replace(/\/$/, '') + (req.url ?? '/').replace(/^\/v1/, '');
    const out = request(
      { host: to.hostname, port: to.port, method: req.method, path, headers: req.headers, agent },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function gateway(): Promise<number> {
  // The sample imports the package by name: here, its sources (as Jest's moduleNameMapper does).
  const resolver = Module as unknown as {
    _resolveFilename(request: string, ...rest: unknown[]): string;
  };
  const resolve = resolver._resolveFilename;
  const src = join(__dirname, '..', 'src');
  const entries: Record<string, string> = {
    'nestjs-switchboard': join(src, 'index.ts'),
    'nestjs-switchboard/extend': join(src, 'extend', 'index.ts'),
    'nestjs-switchboard/testing': join(src, 'testing', 'index.ts'),
  };
  resolver._resolveFilename = function (request, ...rest) {
    return resolve.call(this, entries[request] ?? request, ...rest);
  };
  // Imported here: the floor process loads none of it.
  const { createGateway } = await import('../sample/main');
  const g = await createGateway({ port: 0, host: '127.0.0.1', logger: false });
  return Number(new URL(g.url).port);
}

async function main(): Promise<void> {
  const [kind, ...targets] = process.argv.slice(2);
  const port = kind === 'floor' ? await floor(targets) : await gateway();
  process.stdout.write(`READY ${port}\n`);
  // A clean exit on a signal (a `--cpu-prof` profile is written then).
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(0));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

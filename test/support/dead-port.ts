import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago and has nothing listening on it: a
 * connection to it is refused. It is drawn below the ephemeral range: a port taken with port 0 is
 * handed out again to the servers other workers start on port 0 and as the source port of
 * outgoing connections (one whose source and destination ports match connects to itself), so a
 * "dead" port from that range may answer a moment later. The range is not Redis's
 * (`redis-server.ts`, 20 000 and up).
 *
 * @example
 * ```ts
 * const baseURL = `http://127.0.0.1:${await deadPort()}/openai/v1/`;
 * ```
 */
export async function deadPort(): Promise<number> {
  for (;;) {
    const port = 10_000 + Math.floor(Math.random() * 10_000);
    const server = createServer();
    const free = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (!free) continue;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
  }
}

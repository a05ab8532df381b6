import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What an {@link IdleClosingServer} saw. */
export interface IdleClosingStats {
  /** Requests that arrived. */
  requests: number;
  /** Requests answered with a completion. */
  answered: number;
  /** Requests that arrived on a socket idle too long: the socket was closed under them. */
  closedUnder: number;
  /** Connections opened by clients. */
  connections: number;
}

/**
 * A plain `node:http` server that answers Chat Completions and closes keep-alive sockets idle for
 * longer than `idleMs`, without a `Keep-Alive` hint, the way some proxies do. Closing happens when
 * the next request arrives on such a socket, so the race a real idle timer leaves to chance (the
 * server's close crossing the client's next request) happens every time, before any byte of an
 * answer. Idleness is measured on `clock`, which the test moves.
 */
export interface IdleClosingServer {
  readonly baseURL: string;
  readonly stats: IdleClosingStats;
  /** Also close the socket under the next `n` requests that arrive on a socket not idle too long. */
  closeNext(n: number): void;
  close(): Promise<void>;
}

/**
 * Starts an {@link IdleClosingServer} on 127.0.0.1, port 0.
 *
 * @param close `'end'` sends a FIN (undici: `other side closed`), `'reset'` a RST (`ECONNRESET`).
 */
export async function idleClosingServer(options: {
  idleMs: number;
  clock: () => number;
  close: 'end' | 'reset';
}): Promise<IdleClosingServer> {
  const { idleMs, clock, close } = options;
  const stats: IdleClosingStats = { requests: 0, answered: 0, closedUnder: 0, connections: 0 };
  const idleSince = new WeakMap<Socket, number>();
  let forced = 0;
  const server: Server = createServer((req, res) => {
    stats.requests++;
    const since = idleSince.get(req.socket);
    const idle = since !== undefined && clock() - since > idleMs;
    if (idle || forced > 0) {
      if (idle) stats.closedUnder++;
      else forced--;
      if (close === 'reset') req.socket.resetAndDestroy();
      else req.socket.end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model: string };
      res.on('finish', () => idleSince.set(req.socket, clock()));
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          id: `chatcmpl-${stats.requests}`,
          object: 'chat.completion',
          created: 0,
          model: body.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: 'ok', refusal: null },
              finish_reason: 'stop',
              logprobs: null,
            },
          ],
          usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
        }),
      );
      stats.answered++;
    });
  });
  // 0 turns off Node's own idle timer and with it the `Keep-Alive: timeout=` hint.
  server.keepAliveTimeout = 0;
  server.on('connection', () => stats.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    stats,
    closeNext: (n) => {
      forced += n;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What a {@link ScriptedUpstream} saw of one request. */
export interface ScriptedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** How a {@link ScriptedUpstream} answers one request: it writes the answer itself. */
export type ScriptedAnswer = (req: ScriptedRequest, res: ServerResponse) => void;

/**
 * A plain `node:http` server on 127.0.0.1 that answers whatever the test scripts, byte for byte:
 * headers no well-behaved upstream sends (`retry-after: 1e300`), redirects, bodies cut short or
 * sent a byte at a time. It keeps every request it received and every socket clients opened.
 */
export interface ScriptedUpstream {
  /** `http://127.0.0.1:<port>`, no path. */
  readonly origin: string;
  readonly requests: ScriptedRequest[];
  /** Sockets clients opened that are still open. */
  readonly openSockets: number;
  /** How requests are answered from now on. */
  answer: ScriptedAnswer;
  close(): Promise<void>;
}

/**
 * Starts a {@link ScriptedUpstream} answering with `answer` (a 200 `{}` by default).
 *
 * @example
 * ```ts
 * const up = await scriptedUpstream((_req, res) => res.writeHead(429, { 'retry-after': '1e300' }).end('{}'));
 * ```
 */
export async function scriptedUpstream(
  answer: ScriptedAnswer = (_req, res) => json(res, 200, {}),
): Promise<ScriptedUpstream> {
  const sockets = new Set<Socket>();
  const requests: ScriptedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const seen: ScriptedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(seen);
      up.answer(seen, res);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  const up: ScriptedUpstream = {
    origin: `http://127.0.0.1:${port}`,
    requests,
    get openSockets() {
      return sockets.size;
    },
    answer,
    close: () =>
      new Promise<void>((done) => {
        for (const s of sockets) s.destroy();
        server.close(() => done());
      }),
  };
  return up;
}

/** Answers `status` with `body` as JSON and `headers` beside the content type. */
export function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** A Chat Completions answer of one word, with `usage` as given. */
export function completion(usage: unknown = { prompt_tokens: 3, completion_tokens: 1 }): unknown {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 0,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: 'pong' }, finish_reason: 'stop' }],
    usage,
  };
}

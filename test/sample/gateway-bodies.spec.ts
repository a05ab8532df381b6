/**
 * The gateway reads no body before it lets a request in on its headers, and none for a route that
 * takes none: ten 19 MB bodies sent without a key (to a path that is no route, and chunked to an
 * API route) are answered while the client has sent only their first 64 KB, and once answered
 * the gateway reads at most its discard limit of each before it cuts the connection. Gateways in
 * process on free ports, under express and fastify, raw HTTP.
 */
import type { Server, ClientRequest } from 'node:http';
import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { DISCARD_LIMIT } from '../../sample/guard/door';
import type { Gateway } from '../../sample/main';
import { gatewayWith } from '../support/gateway';

const SIZE = 19 * 1024 * 1024;
const FIRST = Buffer.alloc(64 * 1024, '[');
const CHUNK = Buffer.alloc(1024 * 1024, '{');
const BODIES = 10;

interface Answer {
  status: number;
  text: string;
  /** Body bytes the client had written when the answer arrived. */
  sentWhenAnswered: number;
}

/** Resolves once the request can take more bytes, or false once its connection is gone. */
function drained(req: ClientRequest): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      req.off('drain', onDrain);
      req.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    req.on('drain', onDrain);
    req.on('close', onClose);
  });
}

/**
 * A POST of a 19 MB body (declared, or chunked): its headers and first 64 KB, then nothing until
 * the answer has come; then the rest, until the gateway cuts the connection. A gateway that
 * waited for the body would never answer (the test times out).
 */
async function hugeBody(
  url: string,
  options: { chunked: boolean; headers?: Record<string, string> },
): Promise<Answer> {
  const req = httpRequest(url, {
    method: 'POST',
    agent: false,
    headers: {
      'content-type': 'application/json',
      ...(options.chunked ? {} : { 'content-length': String(SIZE) }),
      ...options.headers,
    },
  });
  // A cut connection is what this test expects once the answer is in.
  req.on('error', () => undefined);
  let sent = 0;
  const answer = new Promise<Answer>((resolve) => {
    req.on('response', (res) => {
      const sentWhenAnswered = sent;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          text: Buffer.concat(chunks).toString('utf8'),
          sentWhenAnswered,
        }),
      );
    });
  });
  req.write(FIRST);
  sent += FIRST.length;
  const answered = await answer;
  while (sent < SIZE && !req.destroyed) {
    sent += CHUNK.length;
    if (!req.write(CHUNK) && !(await drained(req))) break;
  }
  req.destroy();
  return answered;
}

/** Every connection the gateway accepts from now on, to read how many bytes it read. */
function watchSockets(gateway: Gateway): Socket[] {
  const sockets: Socket[] = [];
  (gateway.app.getHttpServer() as Server).on('connection', (s: Socket) => sockets.push(s));
  return sockets;
}

const bytesRead = (sockets: Socket[]): number => sockets.reduce((n, s) => n + s.bytesRead, 0);

describe.each(['express', 'fastify'] as const)('under %s', (platform) => {
  describe('with keys', () => {
    let gateway: Gateway;
    beforeAll(async () => {
      gateway = await gatewayWith({ GATEWAY_API_KEYS: 'key-one' }, { platform });
    });
    afterAll(() => gateway?.close());

    it.each([
      ['a path that is no route, with a declared length', '/no-such-route', false],
      ['an API route, chunked', '/v1/chat/completions', true],
    ])('answers ten 19 MB bodies to %s with 401 before reading them', async (_, path, chunked) => {
      const sockets = watchSockets(gateway);
      const answers = await Promise.all(
        Array.from({ length: BODIES }, () => hugeBody(`${gateway.url}${path}`, { chunked })),
      );
      for (const answer of answers) {
        expect(answer.status).toBe(401);
        expect(answer.sentWhenAnswered).toBe(FIRST.length);
      }
      if (path.startsWith('/v1/')) {
        expect(JSON.parse(answers[0]!.text)).toMatchObject({
          error: { code: 'invalid_api_key' },
        });
      }
      expect(sockets).toHaveLength(BODIES);
      // Headers, the first 64 KB, and what is discarded before the connection is cut; not
      // the 190 MB sent.
      expect(bytesRead(sockets)).toBeLessThan(BODIES * (DISCARD_LIMIT + 2 * CHUNK.length));
    });

    it('answers a declared length beyond the limit with 413 after the key, before the body', async () => {
      const headers = { 'content-length': String(21 * 1024 * 1024) };
      const url = `${gateway.url}/v1/chat/completions`;
      const keyless = await hugeBody(url, { chunked: false, headers });
      expect(keyless.status).toBe(401);
      const tooLarge = await hugeBody(url, {
        chunked: false,
        headers: { ...headers, authorization: 'Bearer key-one' },
      });
      expect(tooLarge.status).toBe(413);
      expect(tooLarge.sentWhenAnswered).toBe(FIRST.length);
      expect(JSON.parse(tooLarge.text)).toMatchObject({ error: { type: expect.any(String) } });
    });
  });

  describe('without keys', () => {
    let gateway: Gateway;
    beforeAll(async () => {
      gateway = await gatewayWith({}, { platform });
    });
    afterAll(() => gateway?.close());

    it('answers ten 19 MB bodies to a path that is no route with 404 without reading them', async () => {
      const sockets = watchSockets(gateway);
      const answers = await Promise.all(
        Array.from({ length: BODIES }, () =>
          hugeBody(`${gateway.url}/no-such-route`, { chunked: false }),
        ),
      );
      for (const answer of answers) {
        expect(answer.status).toBe(404);
        expect(answer.sentWhenAnswered).toBe(FIRST.length);
      }
      expect(bytesRead(sockets)).toBeLessThan(BODIES * (DISCARD_LIMIT + 2 * CHUNK.length));
    });
  });
});

/**
 * The gateway's API requests take the fast path (guard, then the relay) when their body has a
 * declared length, and Nest's route otherwise: the answers are the same either way, and a
 * request the guard refuses is refused in the API's shape without spending a key's limit.
 * Gateways in process on free ports, raw HTTP.
 */
import { request as httpRequest } from 'node:http';
import { KeyLimits } from '../../sample/guard/key-limits';
import type { Gateway } from '../../sample/main';
import { gatewayWith } from '../support/gateway';

const GPT = 'gpt-4o-mini';
const BODY = JSON.stringify({
  model: GPT,
  max_tokens: 4,
  messages: [{ role: 'user', content: 'hi' }],
});

interface Answer {
  status: number;
  json: Record<string, unknown>;
}

/** A POST whose body goes out in `parts`: with a content-length, or chunked without one. */
function post(
  url: string,
  parts: string[],
  options: { chunked?: boolean; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const body = parts.join('');
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...(options.chunked ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
    ...options.headers,
  };
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          json: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
        }),
      );
    });
    for (const part of parts) req.write(part);
    req.end();
  });
}

describe('without keys', () => {
  let gateway: Gateway;
  beforeAll(async () => {
    gateway = await gatewayWith({});
  });
  afterAll(() => gateway?.close());

  it('answers a chat call the same with a declared length and chunked', async () => {
    const url = `${gateway.url}/v1/chat/completions`;
    const parts = [BODY.slice(0, 20), BODY.slice(20)];
    const fast = await post(url, parts);
    const routed = await post(url, parts, { chunked: true });
    for (const answer of [fast, routed]) {
      expect(answer.status).toBe(200);
      expect(answer.json).toMatchObject({ object: 'chat.completion', model: expect.any(String) });
    }
  });

  it("answers a body that is not JSON, or empty, in the API's shape on both paths", async () => {
    const url = `${gateway.url}/v1/chat/completions`;
    for (const chunked of [false, true]) {
      const bad = await post(url, ['{"model":'], { chunked });
      expect(bad.status).toBe(400);
      expect(bad.json).toMatchObject({ error: { message: expect.any(String) } });
    }
    const empty = await post(url, []);
    expect(empty.status).toBe(400);
    expect(empty.json).toMatchObject({ error: { message: expect.stringContaining('JSON') } });
  });
});

describe('with a key and one call in flight per key', () => {
  let gateway: Gateway;
  beforeAll(async () => {
    gateway = await gatewayWith({
      GATEWAY_API_KEYS: 'key-one',
      GATEWAY_KEY_MAX_IN_FLIGHT: '1',
    });
  });
  afterAll(() => gateway?.close());

  it("refuses a wrong key in the API's shape and spends none of the key's limit", async () => {
    const url = `${gateway.url}/v1/chat/completions`;
    const refused = await post(url, [BODY], { headers: { authorization: 'Bearer nope' } });
    expect(refused.status).toBe(401);
    expect(refused.json).toMatchObject({ error: { code: 'invalid_api_key' } });
    expect(gateway.app.get(KeyLimits, { strict: false }).flying(0)).toBe(0);
    const served = await post(url, [BODY], { headers: { authorization: 'Bearer key-one' } });
    expect(served.status).toBe(200);
  });
});

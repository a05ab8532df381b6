/**
 * Without keys the gateway answers only its own machine, and no page of another site: a browser
 * that a page drives can reach 127.0.0.1 with a loopback `Host`, but it says where the request
 * comes from (`Origin`, `Sec-Fetch-Site`), and it cannot send JSON there without a CORS preflight,
 * which the gateway does not answer. Gateways in process on free ports, under express and fastify,
 * raw HTTP.
 */
import { request as httpRequest } from 'node:http';
import type { Gateway } from '../../sample/main';
import { Simulation } from '../../sample/simulation/simulation';
import { gatewayWith } from '../support/gateway';

const CHAT = JSON.stringify({
  model: 'gpt-4o-mini',
  max_tokens: 4,
  messages: [{ role: 'user', content: 'hi' }],
});
const MESSAGE = JSON.stringify({
  model: 'claude-sonnet-5',
  max_tokens: 4,
  messages: [{ role: 'user', content: 'hi' }],
});

function post(
  url: string,
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          json: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
        }),
      );
    });
    req.end(body);
  });
}

describe.each(['express', 'fastify'] as const)('without keys, under %s', (platform) => {
  let gateway: Gateway;
  const upstreamRequests = (): number =>
    gateway.app.get(Simulation).upstream.deployments.reduce((sum, d) => sum + d.stats.requests, 0);

  beforeAll(async () => {
    gateway = await gatewayWith({}, { platform });
  });
  afterAll(() => gateway?.close());
  afterEach(() => gateway.app.get(Simulation).upstream.reset());

  it("refuses a page of another site's text/plain POST (no preflight) with 403, sending nothing upstream", async () => {
    const chat = `${gateway.url}/v1/chat/completions`;
    // What `fetch(url, { method: 'POST', mode: 'no-cors', body })` from another site sends.
    const noCors = await post(chat, CHAT, {
      'content-type': 'text/plain;charset=UTF-8',
      origin: 'https://pages.attacker.example',
      'sec-fetch-site': 'cross-site',
      'sec-fetch-mode': 'no-cors',
    });
    expect(noCors.status).toBe(403);
    expect(noCors.json).toMatchObject({ error: { code: 'forbidden_origin' } });
    // Either sign alone is enough: an Origin of another site, a null one, or the fetch metadata.
    const signs: Record<string, string>[] = [
      { origin: 'http://127.0.0.1.attacker.example:3000' },
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site' },
    ];
    for (const headers of signs) {
      const answer = await post(chat, CHAT, { 'content-type': 'application/json', ...headers });
      expect(answer.status).toBe(403);
    }
    const anthropic = await post(`${gateway.url}/v1/messages`, MESSAGE, {
      'content-type': 'text/plain',
      origin: 'https://pages.attacker.example',
    });
    expect(anthropic.status).toBe(403);
    expect(anthropic.json).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    expect(upstreamRequests()).toBe(0);
  });

  it("answers a /v1 POST that is not JSON with 415 in the API's shape", async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
      const answer = await post(
        `${gateway.url}/v1/chat/completions`,
        CHAT,
        type === undefined ? {} : { 'content-type': type },
      );
      expect(answer.status).toBe(415);
      expect(answer.json).toMatchObject({ error: { code: 'unsupported_media_type' } });
    }
    expect(upstreamRequests()).toBe(0);
  });

  it('serves JSON from its own machine: no Origin, a loopback Origin, same-origin fetch metadata', async () => {
    const local: Record<string, string>[] = [
      {},
      { origin: gateway.url, 'sec-fetch-site': 'same-origin' },
      { origin: 'http://localhost:5173', 'sec-fetch-site': 'same-site' },
      { origin: 'http://[::1]:8080' },
    ];
    for (const headers of local) {
      const answer = await post(`${gateway.url}/v1/chat/completions`, CHAT, {
        'content-type': 'application/json; charset=utf-8',
        ...headers,
      });
      expect(answer.status).toBe(200);
    }
    expect(upstreamRequests()).toBe(4);
  });
});

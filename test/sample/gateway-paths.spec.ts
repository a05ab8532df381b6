/**
 * The gateway's paths match exactly, case included, in its guard and in its routes: a path in
 * another case is no route (before, `/V1/models` was served by the router, which ignored case,
 * while the guard's per-key limits applied only to `/v1/`). The probes and the status page's own
 * files answer without a key: a kubelet sends none, nor does a `<script src>`. Gateways in
 * process on free ports, under express and fastify, raw HTTP.
 */
import type { Gateway } from '../../sample/main';
import { gatewayWith } from '../support/gateway';

const KEY = 'the-only-key';

describe.each(['express', 'fastify'] as const)('with keys, under %s', (platform) => {
  let gateway: Gateway;
  const get = (path: string, key?: string) =>
    fetch(`${gateway.url}${path}`, {
      headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
    });

  beforeAll(async () => {
    gateway = await gatewayWith({ GATEWAY_API_KEYS: KEY, GATEWAY_KEY_RPM: '2' }, { platform });
  });
  afterAll(() => gateway?.close());

  it('serves no path that differs from a route by case, so none skips the per-key limits', async () => {
    const chat = (path: string) =>
      fetch(`${gateway.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
      });
    // GATEWAY_KEY_RPM counts the key's model calls: two fill its minute.
    for (let i = 0; i < 2; i++) expect((await chat('/v1/chat/completions')).status).toBe(200);
    expect((await chat('/v1/chat/completions')).status).toBe(429);
    for (const path of ['/V1/models', '/v1/MODELS', '/V1/responses/resp_1', '//v1/models']) {
      const answer = await get(path, KEY);
      expect([404, 429]).toContain(answer.status);
    }
    for (const path of ['/V1/chat/completions', '/v1/Chat/Completions']) {
      expect((await chat(path)).status).toBe(404);
    }
  });

  it('answers the probes without a key, and shows no key or address in them', async () => {
    for (const path of ['/health', '/health/ready', '/health/live']) {
      const answer = await get(path);
      expect(answer.status).toBe(200);
      const text = await answer.text();
      expect(JSON.parse(text)).toMatchObject({ status: 'ok' });
      expect(text).not.toContain(KEY);
      expect(text).not.toMatch(/https?:\/\//);
    }
    // Only the exact paths are open.
    expect((await get('/HEALTH/live')).status).toBe(401);
    expect((await get('/health/live/x')).status).toBe(401);
  });

  if (platform === 'express') {
    it("answers the status page's files without a key, the chart's script included", async () => {
      for (const path of ['/', '/status.css', '/status.js', '/chart.js']) {
        expect((await get(path)).status).toBe(200);
      }
      expect((await get('/switchboard')).status).toBe(401);
    });
  }
});

/**
 * The gateway's calls reach the switchboard's queue with their lane and tenant: the headers
 * `x-switchboard-lane` and `x-switchboard-tenant`; with GATEWAY_API_KEYS the key is the tenant (by
 * its digest, never the key itself), and a named tenant is a part of the key's own.
 */
import { keyTenant } from '../../sample/guard/gateway-keys';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import type { Gateway } from '../../sample/main';
import { eventually } from '../support/eventually';
import { gatewayWith, oneSlowDeployment } from '../support/gateway';

const GPT = 'gpt-4o-mini';
const KEYS = ['first-secret-key', 'second-secret-key', 'third-secret-key'];
const ADMIN = 'admin-secret-key';

const chat = JSON.stringify({
  model: GPT,
  max_tokens: 4,
  messages: [{ role: 'user', content: 'hi' }],
});

describe('the gateway: lanes and tenants', () => {
  let upstream: SimulatedUpstream;
  let gateway: Gateway;
  let dir: string;

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({ deployments: [{ name: 'solo' }] });
    dir = mkdtempSync(join(tmpdir(), 'switchboard-tenants-'));
    gateway = await gatewayWith({
      GATEWAY_API_KEYS: KEYS.join(','),
      GATEWAY_ADMIN_KEYS: ADMIN,
      SWITCHBOARD_CONFIG: oneSlowDeployment(dir, upstream, GPT),
    });
  });
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const post = (key: string, headers: Record<string, string> = {}) =>
    fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
      body: chat,
    });

  it("each key is a tenant; x-switchboard-tenant names a part of the key's own; x-switchboard-lane picks the lane", async () => {
    const sb = gateway.app.get(Switchboard);
    expect((await post(KEYS[0]!)).status).toBe(200);
    // The one request of the minute is spent: the next calls wait, each under its tenant.
    const waiting = [
      post(KEYS[1]!),
      post(KEYS[0]!, { 'x-switchboard-tenant': 'acme' }),
      post(KEYS[2]!, { 'x-switchboard-lane': 'batch' }),
    ];
    await eventually(() => sb.queue!.length(GPT) === 3, { what: 'the calls to queue' });
    const queued = sb.queue!.waiting(GPT);
    expect(queued.interactive).toEqual(
      new Map([
        [keyTenant(KEYS[1]!), 1],
        [`${keyTenant(KEYS[0]!)}/acme`, 1],
      ]),
    );
    expect(queued.batch).toEqual(new Map([[keyTenant(KEYS[2]!), 1]]));
    // The status page shows an admin key the queue by lane and tenant, and no key; another key
    // only its own tenant's lines.
    const own = await fetch(`${gateway.url}/switchboard`, {
      headers: { authorization: `Bearer ${KEYS[0]}`, accept: 'application/json' },
    });
    expect(((await own.json()) as { queue: unknown[] }).queue).toEqual([
      { model: GPT, lane: 'interactive', tenant: `${keyTenant(KEYS[0]!)}/acme`, waiting: 1 },
    ]);
    const page = await fetch(`${gateway.url}/switchboard`, {
      headers: { authorization: `Bearer ${ADMIN}`, accept: 'application/json' },
    });
    const text = await page.text();
    expect(JSON.parse(text)).toMatchObject({
      queue: [
        { model: GPT, lane: 'interactive', tenant: keyTenant(KEYS[1]!), waiting: 1 },
        { model: GPT, lane: 'interactive', tenant: `${keyTenant(KEYS[0]!)}/acme`, waiting: 1 },
        { model: GPT, lane: 'batch', tenant: keyTenant(KEYS[2]!), waiting: 1 },
      ],
    });
    for (const key of [...KEYS, ADMIN]) expect(text).not.toContain(key);

    // A key cannot wait as another key's tenant, by header or by body field: what it names is a
    // part of its own, which waits in its own turn.
    waiting.push(post(KEYS[2]!, { 'x-switchboard-tenant': keyTenant(KEYS[0]!) }));
    waiting.push(
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS[2]}` },
        body: JSON.stringify({ ...(JSON.parse(chat) as object), tenant: keyTenant(KEYS[1]!) }),
      }),
    );
    await eventually(() => sb.queue!.length(GPT) === 5, { what: 'two more calls to queue' });
    expect(sb.queue!.waiting(GPT).interactive).toEqual(
      new Map([
        [keyTenant(KEYS[1]!), 1],
        [`${keyTenant(KEYS[0]!)}/acme`, 1],
        [`${keyTenant(KEYS[2]!)}/${keyTenant(KEYS[0]!)}`, 1],
        [keyTenant(KEYS[2]!), 1],
      ]),
    );
    for (const named of ['x'.repeat(65), 'two words', 'a/b']) {
      const refused = await post(KEYS[0]!, { 'x-switchboard-tenant': named });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ error: { code: 'invalid_tenant' } });
    }

    const unknown = await post(KEYS[0]!, { 'x-switchboard-lane': 'urgent' });
    expect(unknown.status).toBe(400);
    expect(await unknown.text()).toContain("lane must be 'interactive' or 'batch'");

    await sb.close();
    expect((await Promise.all(waiting)).map((r) => r.status)).toEqual([503, 503, 503, 503, 503]);
    // The headers went no further than the switchboard.
    const sentHeaders = upstream.deployment('solo').requests.map((r) => JSON.stringify(r));
    expect(sentHeaders.join('\n')).not.toContain('x-switchboard');
  });
});

/**
 * The response cache behind the sample gateway, with two keys: each key is its own tenant, so the
 * same request made with two keys goes upstream twice; a streamed answer comes back as the same
 * bytes; `cache-control: no-store` goes upstream.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Gateway } from '../../sample/main';
import { SimulatedUpstream } from '../../src/testing';
import { gatewayWith } from '../support/gateway';
import { ask, GPT } from '../support/upstream';

let upstream: SimulatedUpstream;
let gateway: Gateway;
let dir: string;

beforeAll(async () => {
  upstream = await SimulatedUpstream.start({ deployments: [{ name: 'solo' }] });
  dir = mkdtempSync(join(tmpdir(), 'sb-cache-'));
  const file = join(dir, 'switchboard.json');
  writeFileSync(
    file,
    JSON.stringify({
      deployments: [
        {
          provider: 'openai',
          name: 'solo',
          baseURL: upstream.deployment('solo').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: GPT }],
        },
      ],
      cache: { ttl: 60_000 },
    }),
  );
  gateway = await gatewayWith({ GATEWAY_API_KEYS: 'key-one,key-two', SWITCHBOARD_CONFIG: file });
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
});

const sent = () => upstream.deployment('solo').stats.requests;

function post(key: string, body: object, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });
}

describe('the response cache behind the gateway', () => {
  it('keeps two keys apart, serves one key again, and goes upstream on no-store', async () => {
    const before = sent();
    const one = await (await post('key-one', ask('same question'))).json();
    const two = await post('key-two', ask('same question'));
    expect(two.headers.get('x-switchboard-cache')).toBeNull();
    await two.arrayBuffer();
    expect(sent() - before).toBe(2);
    const again = await post('key-one', ask('same question'));
    expect(again.headers.get('x-switchboard-cache')).toBe('hit');
    expect(await again.json()).toEqual(one);
    expect(sent() - before).toBe(2);
    await (await post('key-one', ask('same question'), { 'cache-control': 'no-store' })).text();
    expect(sent() - before).toBe(3);
  });

  it('a streamed answer comes back as the bytes it first came in', async () => {
    const before = sent();
    const body = ask('stream through the gateway', { stream: true });
    const first = await (await post('key-two', body)).text();
    const again = await post('key-two', body);
    expect(again.headers.get('content-type')).toMatch(/text\/event-stream/);
    expect(await again.text()).toBe(first);
    expect(first).toMatch(/data: \[DONE\]\n\n$/);
    expect(sent() - before).toBe(1);
  });
});

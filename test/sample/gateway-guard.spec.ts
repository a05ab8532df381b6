/**
 * The gateway as a team puts it on a network: keys (`GATEWAY_API_KEYS`) and per-key limits, the
 * `Host` check on loopback without keys (the refusal to listen beyond loopback is in
 * gateway-exposure.spec), inputs a client controls that cannot cost memory, and errors that say
 * when to retry. Gateways in process on free ports (one per setting, started once), driven by the
 * real SDK clients and raw HTTP.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { KeyLimits } from '../../sample/guard/key-limits';
import type { Gateway } from '../../sample/main';
import { Simulation } from '../../sample/simulation/simulation';
import { eventually } from '../support/eventually';
import { gatewayWith, oneSlowDeployment } from '../support/gateway';

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-sonnet-5';
const KEYS = ['key-one', 'key-two', 'key-three'];

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: () => unknown;
}

/** One HTTP request with the headers given as they are (`fetch` does not send a chosen `Host`). */
function raw(
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    signal?: AbortSignal;
  } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, {
      method: options.method ?? 'GET',
      headers: options.headers,
      signal: options.signal,
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          text,
          json: () => JSON.parse(text),
        });
      });
    });
    req.end(options.body);
  });
}

const chatBody = (extra: object = {}): string =>
  JSON.stringify({
    model: GPT,
    max_tokens: 4,
    messages: [{ role: 'user', content: 'hi' }],
    ...extra,
  });

const post = (url: string, body: string, headers: Record<string, string> = {}): Promise<Answer> =>
  raw(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

/** Starts a gateway with these environment variables set (and the others of {@link ENV} unset). */
function upstreamRequests(gateway: Gateway): number {
  return gateway.app
    .get(Simulation)
    .upstream.deployments.reduce((sum, d) => sum + d.stats.requests, 0);
}

function retryAfterOf(answer: Answer): { seconds: string; ms: string } {
  return {
    seconds: String(answer.headers['retry-after']),
    ms: String(answer.headers['retry-after-ms']),
  };
}

describe('with GATEWAY_API_KEYS', () => {
  let gateway: Gateway;

  beforeAll(async () => {
    gateway = await gatewayWith({
      GATEWAY_API_KEYS: KEYS.join(','),
      GATEWAY_KEY_RPM: '4',
      GATEWAY_KEY_MAX_IN_FLIGHT: '1',
    });
  });
  afterAll(() => gateway?.close());
  afterEach(() => gateway.app.get(Simulation).upstream.reset());

  it('answers 401 in the OpenAI and the Anthropic shape, and sends nothing upstream', async () => {
    const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: 'wrong', maxRetries: 0 });
    const chat = await openai.chat.completions
      .create({ model: GPT, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(chat).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((chat as InstanceType<typeof OpenAI.AuthenticationError>).error).toEqual({
      message: 'Invalid API key.',
      type: 'invalid_request_error',
      param: null,
      code: 'invalid_api_key',
    });
    const message = await anthropic.messages
      .create({ model: CLAUDE, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(message).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((message as InstanceType<typeof Anthropic.AuthenticationError>).error).toEqual({
      type: 'error',
      error: { type: 'authentication_error', message: 'Invalid API key.' },
    });

    const missing = await post(`${gateway.url}/v1/chat/completions`, chatBody());
    expect(missing.status).toBe(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer');
    expect(missing.json()).toMatchObject({
      error: { code: 'invalid_api_key', type: 'invalid_request_error' },
    });
    // Neither the key sent nor the keys configured appear in an answer.
    for (const text of [missing.text, JSON.stringify((chat as { error: unknown }).error)]) {
      for (const key of [...KEYS, 'wrong']) expect(text).not.toContain(key);
    }
    expect(upstreamRequests(gateway)).toBe(0);
  });

  it('takes the key as Authorization: Bearer (OpenAI clients) and x-api-key (Anthropic clients)', async () => {
    const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'key-one', maxRetries: 0 });
    const completion = await openai.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'with a key' }],
    });
    expect(completion.choices[0]?.message.content).toBe('with a key');
    const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: 'key-one', maxRetries: 0 });
    const message = await anthropic.messages.create({
      model: CLAUDE,
      max_tokens: 16,
      messages: [{ role: 'user', content: 'with x-api-key' }],
    });
    expect(message.type).toBe('message');
  });

  it('guards /switchboard, /metrics and the mark-down endpoint; /health and the page stay open', async () => {
    const markDown = `${gateway.url}/switchboard/deployments/aoai-eastus/mark-down`;
    for (const answer of [
      await raw(`${gateway.url}/switchboard`),
      await raw(`${gateway.url}/metrics`),
      await post(markDown, '{}'),
      await raw(`${gateway.url}/switchboard`, { headers: { 'x-api-key': 'nope' } }),
    ]) {
      expect(answer.status).toBe(401);
    }
    const auth = { authorization: 'Bearer key-two' };
    expect((await raw(`${gateway.url}/switchboard`, { headers: auth })).status).toBe(200);
    expect(
      (await raw(`${gateway.url}/metrics`, { headers: { 'x-api-key': 'key-two' } })).status,
    ).toBe(200);
    expect((await post(markDown, JSON.stringify({ ms: 1 }), auth)).status).toBe(200);
    expect((await raw(`${gateway.url}/health`)).status).not.toBe(401);
    expect((await raw(`${gateway.url}/`)).status).toBe(200);
    expect((await raw(`${gateway.url}/status.js`)).status).toBe(200);
  });

  it('limits requests per minute per key: 429 with a bounded integer retry-after, in each shape', async () => {
    const auth = { authorization: 'Bearer key-two' };
    for (let i = 0; i < 4; i++) {
      expect((await post(`${gateway.url}/v1/chat/completions`, chatBody(), auth)).status).toBe(200);
    }
    const over = await post(`${gateway.url}/v1/chat/completions`, chatBody(), auth);
    expect(over.status).toBe(429);
    expect(over.json()).toMatchObject({
      error: { type: 'rate_limit_error', code: 'rate_limit_exceeded' },
    });
    const { seconds, ms } = retryAfterOf(over);
    expect(seconds).toMatch(/^\d+$/);
    expect(Number(seconds)).toBeGreaterThanOrEqual(1);
    expect(Number(seconds)).toBeLessThanOrEqual(60);
    expect(ms).toMatch(/^\d+$/);
    const anthropic = await post(
      `${gateway.url}/v1/messages`,
      JSON.stringify({ model: CLAUDE, max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
      { 'x-api-key': 'key-two' },
    );
    expect(anthropic.status).toBe(429);
    expect(anthropic.json()).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    // Another key is not held back by this one.
    const other = await post(`${gateway.url}/v1/chat/completions`, chatBody(), {
      authorization: 'Bearer key-one',
    });
    expect(other.status).toBe(200);
  });

  it('limits calls in flight per key, and frees the slot when the call ends', async () => {
    const sim = gateway.app.get(Simulation).upstream;
    const limits = gateway.app.get(KeyLimits);
    for (const d of sim.deployments) d.fail({ kind: 'hang' }, 1);
    const auth = { authorization: 'Bearer key-three' };
    const abort = new AbortController();
    const held = raw(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: chatBody(),
      signal: abort.signal,
    }).catch((e: unknown) => e);
    await eventually(() => limits.flying(2) === 1 && upstreamRequests(gateway) === 1, {
      what: 'a call of key-three held upstream',
    });
    const refused = await post(`${gateway.url}/v1/chat/completions`, chatBody(), auth);
    expect(refused.status).toBe(429);
    expect(retryAfterOf(refused)).toEqual({ seconds: '1', ms: '1000' });
    expect(upstreamRequests(gateway)).toBe(1);
    abort.abort();
    await held;
    await eventually(() => limits.flying(2) === 0, { what: 'the slot to be freed' });
    sim.reset();
    expect((await post(`${gateway.url}/v1/chat/completions`, chatBody(), auth)).status).toBe(200);
  });
});

describe('on loopback without keys', () => {
  let gateway: Gateway;
  let sb: Switchboard;

  beforeAll(async () => {
    gateway = await gatewayWith({});
    sb = gateway.app.get(Switchboard);
  });
  afterAll(() => gateway?.close());
  afterEach(() => {
    // The upstreams start afresh, and so does the switchboard's view of them: a test's calls must
    // not leave the next one at a quota the upstreams no longer count.
    gateway.app.get(Simulation).upstream.reset();
    sb.resetUsage();
    for (const d of sb.deployments.values()) for (const m of d.models.values()) m.markUp();
  });

  it('serves calls without a key, and refuses a Host that is not a loopback name (DNS rebinding)', async () => {
    expect((await post(`${gateway.url}/v1/chat/completions`, chatBody())).status).toBe(200);
    const rebound = await post(`${gateway.url}/v1/chat/completions`, chatBody(), {
      host: 'rebind.attacker.example',
      origin: 'http://rebind.attacker.example',
    });
    expect(rebound.status).toBe(403);
    expect(rebound.json()).toMatchObject({ error: { code: 'forbidden_host' } });
    const state = await raw(`${gateway.url}/switchboard`, {
      headers: { host: 'rebind.attacker.example:80' },
    });
    expect(state.status).toBe(403);
    for (const host of ['localhost:1', '127.0.0.1', '[::1]:3000']) {
      expect((await raw(`${gateway.url}/switchboard`, { headers: { host } })).status).toBe(200);
    }
    expect(upstreamRequests(gateway)).toBe(1);
  });

  it('takes a mark-down only as JSON, with ms of at most a day', async () => {
    const url = `${gateway.url}/switchboard/deployments/aoai-westus/mark-down`;
    const plain = await raw(url, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{"ms":1000}',
    });
    expect(plain.status).toBe(415);
    expect((await raw(url, { method: 'POST' })).status).toBe(415);
    expect((await post(url, JSON.stringify({ ms: 1e300 }))).status).toBe(400);
    expect(sb.deployments.get('aoai-westus')!.models.get(GPT)!.isCooling()).toBe(false);
    expect((await post(url, JSON.stringify({ ms: 2_000 }))).status).toBe(200);
    expect(sb.deployments.get('aoai-westus')!.models.get(GPT)!.isCooling()).toBe(true);
  });

  it('keeps 10 distinct 4 MB session ids in far less memory than they weigh', async () => {
    // The gateway runs in this process: its heap is this heap, measured after full collections.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const heap = (): number => {
      gc();
      gc();
      return process.memoryUsage().heapUsed;
    };
    // Ids kept whole would weigh 40 MB, ten times the bound below: ten ids show it as forty did.
    const ids = 10;
    const size = 4 * 1024 * 1024;
    let sent = 0;
    const send = async (i: number): Promise<void> => {
      // More calls than the simulated deployments' 10-s request windows hold would be refused: this
      // test is about what the ids cost in memory, so the quotas start afresh every ten calls.
      if (sent > 0 && sent % 10 === 0) {
        gateway.app.get(Simulation).upstream.reset();
        sb.resetUsage();
      }
      sent++;
      const sessionId = `${String(i).padStart(4, '0')}${'s'.repeat(size - 4)}`;
      const answer = await post(
        `${gateway.url}/v1/chat/completions`,
        chatBody({ session_id: sessionId }),
      );
      expect(answer.status).toBe(200);
    };
    // One large body first: what the first one leaves for good (buffers, compiled paths) is the
    // same for one id as for a thousand, and is not what is measured.
    await send(ids);
    const before = heap();
    for (let i = 0; i < ids; i++) await send(i);
    const grown = heap() - before;
    // Every id was remembered (as its hash): the sessions map has them all.
    expect(sb.registry.sessions.size).toBeGreaterThanOrEqual(ids);
    expect(grown).toBeLessThan((ids * size) / 10);
    // 40 MB of JSON to send, parse and hash: more than the default timeout on a busy machine.
  }, 120_000);

  it('answers a 1 MB model name with a short error', async () => {
    const answer = await post(
      `${gateway.url}/v1/chat/completions`,
      JSON.stringify({
        model: 'm'.repeat(1024 * 1024),
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(answer.status).toBe(404);
    expect(answer.json()).toMatchObject({ error: { code: 'model_not_found' } });
    expect(answer.text.length).toBeLessThan(1_000);
    expect(upstreamRequests(gateway)).toBe(0);
  });

  it("caps a 429's retry-after: an upstream's hour and a cooldown of an hour both say at most 60 s", async () => {
    const sim = gateway.app.get(Simulation).upstream;
    for (const d of sim.deployments) d.fail({ kind: 'status', status: 429, retryAfter: 3600 }, 10);
    const upstream429 = await post(`${gateway.url}/v1/chat/completions`, chatBody());
    expect(upstream429.status).toBe(429);
    expect(retryAfterOf(upstream429)).toEqual({ seconds: '60', ms: '60000' });
    // Now every deployment cools for the hour the upstreams asked: the switchboard's own no-room
    // error, answered with the same cap.
    const noRoom = await post(`${gateway.url}/v1/chat/completions`, chatBody());
    expect(noRoom.status).toBe(429);
    expect(retryAfterOf(noRoom)).toEqual({ seconds: '60', ms: '60000' });
    expect(upstreamRequests(gateway)).toBe(3);
  });
});

describe('errors that say retry', () => {
  let upstream: SimulatedUpstream;
  let gateway: Gateway;
  let dir: string;

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({ deployments: [{ name: 'solo' }] });
    dir = mkdtempSync(join(tmpdir(), 'switchboard-guard-'));
    gateway = await gatewayWith({ SWITCHBOARD_CONFIG: oneSlowDeployment(dir, upstream, GPT) });
  });
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a call queued when the switchboard closes, and a call after close(), get 503 with retry-after', async () => {
    const sb = gateway.app.get(Switchboard);
    expect((await post(`${gateway.url}/v1/chat/completions`, chatBody())).status).toBe(200);
    // The one request of the minute is spent: the next call waits in the queue.
    const queued = post(`${gateway.url}/v1/chat/completions`, chatBody());
    await eventually(() => sb.queue!.length(GPT) === 1, { what: 'the call to queue' });
    // What the application's shutdown does once its server stops taking requests.
    await sb.close();
    const closedOut = await queued;
    expect(closedOut.status).toBe(503);
    expect(retryAfterOf(closedOut)).toEqual({ seconds: '1', ms: '1000' });
    expect(closedOut.json()).toMatchObject({ error: { type: 'server_error' } });
    const after = await post(`${gateway.url}/v1/chat/completions`, chatBody());
    expect(after.status).toBe(503);
    expect(retryAfterOf(after)).toEqual({ seconds: '1', ms: '1000' });
    expect(upstream.deployment('solo').stats.requests).toBe(1);
  });
});

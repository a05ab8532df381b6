/**
 * What an upstream's error tells a gateway client: a deployment that refuses the gateway's own
 * credentials (401, 403) is the gateway's fault, a 502 in words of its own (before, the client got
 * the upstream's 401, "Incorrect API key provided: sk-proj-****WXYZ", and believed its own key
 * wrong); the operator reads the reason on /health and the status page's data. Any other upstream
 * error text comes through scrubbed of key-shaped words and clipped. Gateways in process on free
 * ports, under express and fastify, driven by the real SDK clients.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { Switchboard } from 'nestjs-switchboard';
import { CREDENTIALS_REFUSED } from '../../src/relay/http-error';
import type { Gateway } from '../../sample/main';
import { Simulation } from '../../sample/simulation/simulation';
import { gatewayWith } from '../support/gateway';

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-sonnet-5';
const KEY = 'the-gateway-key';
const HEX_KEY = '0123456789abcdef0123456789abcdef';

describe.each(['express', 'fastify'] as const)('with keys, under %s', (platform) => {
  let gateway: Gateway;
  const upstream = () => gateway.app.get(Simulation).upstream;

  beforeAll(async () => {
    gateway = await gatewayWith({ GATEWAY_API_KEYS: KEY }, { platform });
  });
  afterAll(() => gateway?.close());
  afterEach(() => {
    upstream().reset();
    for (const d of gateway.app.get(Switchboard).deployments.values()) {
      for (const m of d.models.values()) m.markUp();
    }
  });

  it('answers 502 without its body when every deployment refuses its credentials (401, 403)', async () => {
    for (const d of upstream().deployments) {
      d.fail(
        {
          kind: 'status',
          status: d.name.startsWith('foundry') ? 403 : 401,
          message: 'Incorrect API key provided: sk-proj-****WXYZ',
        },
        Infinity,
      );
    }
    const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const chat = await openai.chat.completions
      .create({ model: GPT, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(chat).toBeInstanceOf(OpenAI.InternalServerError);
    expect((chat as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect((chat as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({
      message: CREDENTIALS_REFUSED,
    });
    const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEY, maxRetries: 0 });
    const message = await anthropic.messages
      .create({ model: CLAUDE, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect((message as InstanceType<typeof Anthropic.APIError>).status).toBe(502);
    for (const error of [chat, message]) {
      const text = JSON.stringify((error as { error: unknown }).error);
      expect(text).not.toContain('sk-proj');
      expect(text).not.toContain('Incorrect API key');
    }
    // The operator sees why: every deployment is out, each with its reason.
    const health = await fetch(`${gateway.url}/health`);
    expect(health.status).toBe(503);
    const text = await health.text();
    expect(text).toContain('unauthorized (401)');
    expect(text).toContain('unauthorized (403)');
    expect(text).not.toContain('sk-proj');
    const state = (await (
      await fetch(`${gateway.url}/switchboard`, { headers: { authorization: `Bearer ${KEY}` } })
    ).json()) as { deployments: { name: string; models: { downReason?: string }[] }[] };
    const reasons = state.deployments.flatMap((d) => d.models.map((m) => m.downReason));
    expect(reasons).toEqual(expect.arrayContaining(['unauthorized (401)', 'unauthorized (403)']));
  });

  it("passes an upstream's other errors on scrubbed of key-shaped words, and clipped", async () => {
    for (const d of upstream().deployments) {
      d.fail(
        {
          kind: 'status',
          status: 400,
          message:
            `Unsupported header api-key: ${HEX_KEY}, Authorization: Bearer sk-live-AbC123dEf456; ` +
            'z'.repeat(20_000),
        },
        1,
      );
    }
    const answer = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: GPT, messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(answer.status).toBe(400);
    const text = await answer.text();
    expect(text.length).toBeLessThan(1_500);
    expect(text).not.toContain(HEX_KEY);
    expect(text).not.toContain('sk-live');
    expect(JSON.parse(text)).toMatchObject({
      error: { message: expect.stringContaining('Unsupported header api-key: [redacted]') },
    });
  });
});

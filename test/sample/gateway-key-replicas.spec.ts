/**
 * A key's limits are its tenant's policy in the switchboard, held through the shared store: two
 * gateways (two replicas) on one real redis-server, configured alike, count one key together, its
 * named parts with it, and answer its 429 in the API's own shape. Real OpenAI and Anthropic
 * clients over HTTP to gateways in process, in front of simulated deployments.
 */
import { keyTenant } from '../../sample/guard/gateway-keys';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import type { Gateway } from '../../sample/main';
import { eventually } from '../support/eventually';
import { gatewayWith } from '../support/gateway';
import { RedisServer } from '../support/redis-server';
import { CLAUDE, GPT, oaiAndClaude } from '../support/upstream';

/**
 * Each test spends a key of its own (its minute starts with it). Every key has the environment's
 * limits; key 3 also has a budget in the configuration file.
 */
const KEYS = ['key-zero', 'key-one', 'key-two', 'key-three', 'key-four', 'key-five'];
/** $1 per million input tokens, $2 per million output tokens. */
const PRICE = { input: 1, output: 2 };
/** What a call of {@link big} reserves: 500 input + 100 output tokens. */
const BIG_RESERVE = (500 * PRICE.input + 100 * PRICE.output) / 1e6;

let server: RedisServer;
let upstream: SimulatedUpstream;
let dir: string;
const gateways: Gateway[] = [];

beforeAll(async () => {
  server = await RedisServer.start();
  upstream = await SimulatedUpstream.start({ deployments: [{ name: 'oai' }, { name: 'claude' }] });
  dir = mkdtempSync(join(tmpdir(), 'gateway-replicas-'));
  const file = join(dir, 'switchboard.json');
  writeFileSync(
    file,
    JSON.stringify({
      deployments: oaiAndClaude(
        upstream,
        { tpm: 10_000_000, rpm: 100_000 },
        { oai: 'sk-oai', claude: 'sk-claude' },
      ),
      pricing: { [GPT]: PRICE },
      // A key's own policy: its budget, with the environment's limits per minute beside it.
      tenants: { [keyTenant(KEYS[3]!)]: { budget: { usd: 2.5 * BIG_RESERVE, per: 'day' } } },
    }),
  );
  const env = {
    GATEWAY_API_KEYS: KEYS.join(','),
    GATEWAY_KEY_RPM: '4',
    GATEWAY_KEY_TPM: '2000',
    SWITCHBOARD_CONFIG: file,
    REDIS_URL: server.url,
  };
  for (let i = 0; i < 2; i++) gateways.push(await gatewayWith(env));
  // Until its first sync a replica counts on its own: wait until both share the store.
  for (const g of gateways) {
    const sb = g.app.get(Switchboard);
    await eventually(() => sb.state.health().lastSync !== undefined, {
      what: 'the gateway to reach Redis',
    });
  }
});
afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await upstream?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => upstream.reset());

const chatCalls = () => upstream.deployment('oai').requests.filter((r) => r.api === 'chat').length;

/** A small chat call through gateway `g` with key `key`, naming `tenant` when given: its status. */
async function small(g: Gateway, key: string, tenant?: string): Promise<number> {
  const answer = await fetch(`${g.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${key}`,
      ...(tenant === undefined ? {} : { 'x-switchboard-tenant': tenant }),
    },
    body: JSON.stringify({ model: GPT, max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
  });
  await answer.arrayBuffer();
  return answer.status;
}

/** A chat call of 600 tokens at admission (2 000 characters: 500, + 100 reserved). */
function big(g: Gateway, key: string): Promise<unknown> {
  const client = new OpenAI({ baseURL: `${g.url}/v1`, apiKey: key, maxRetries: 0 });
  return client.chat.completions
    .create({
      model: GPT,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'x'.repeat(2000) }],
    })
    .catch((e: unknown) => e);
}

describe('two gateways on one Redis, one key', () => {
  it("hold the key's requests per minute through both together", async () => {
    const [a, b] = gateways as [Gateway, Gateway];
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push(await small(i % 2 === 0 ? a : b, KEYS[0]!));
    // Each gateway alone would let 4 through: together they let 4.
    expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
    expect(statuses.slice(4)).toEqual([429, 429, 429, 429]);
    expect(chatCalls()).toBe(4);
    // Another key is not held back by this one, on either gateway.
    expect(await small(a, KEYS[1]!)).toBe(200);
    expect(await small(b, KEYS[1]!)).toBe(200);
    // What the limit counts is model calls: listing the models spends none of it.
    const models = await fetch(`${a.url}/v1/models`, {
      headers: { authorization: `Bearer ${KEYS[0]}` },
    });
    expect(models.status).toBe(200);
  });

  it("hold a key's named parts to the key's one limit, whatever names it sends", async () => {
    const [a, b] = gateways as [Gateway, Gateway];
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      statuses.push(await small(i % 2 === 0 ? a : b, KEYS[2]!, `team-${i}`));
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(4);
    expect(statuses.filter((s) => s === 429)).toHaveLength(8);
    expect(chatCalls()).toBe(4);
  });

  it("answer the key's 429 in the API's own shape, with retry-after, on both APIs", async () => {
    const [a, b] = gateways as [Gateway, Gateway];
    for (const g of [a, b, a, b]) expect(await small(g, KEYS[4]!)).toBe(200);
    const openai = new OpenAI({ baseURL: `${a.url}/v1`, apiKey: KEYS[4], maxRetries: 0 });
    const chat = await openai.chat.completions
      .create({ model: GPT, max_tokens: 4, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(chat).toBeInstanceOf(OpenAI.RateLimitError);
    const chatError = chat as InstanceType<typeof OpenAI.RateLimitError>;
    expect(chatError.error).toMatchObject({ type: 'rate_limit_error', param: null });
    expect(chatError.message).toMatch(
      new RegExp(`Tenant ${keyTenant(KEYS[4]!)} is over its rpm limit: 4 of 4`),
    );
    expect(Number(chatError.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);

    const anthropic = new Anthropic({ baseURL: b.url, apiKey: KEYS[4], maxRetries: 0 });
    const message = await anthropic.messages
      .create({ model: CLAUDE, max_tokens: 4, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(message).toBeInstanceOf(Anthropic.RateLimitError);
    const messageError = message as InstanceType<typeof Anthropic.RateLimitError>;
    expect(messageError.error).toMatchObject({
      type: 'error',
      error: {
        type: 'rate_limit_error',
        message: expect.stringMatching(new RegExp(`Tenant ${keyTenant(KEYS[4]!)}`)),
      },
    });
    expect(Number(messageError.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(upstream.deployment('claude').stats.requests).toBe(0);
  });

  it("hold the key's tokens per minute through both", async () => {
    const [a, b] = gateways as [Gateway, Gateway];
    // 600 tokens each: three fit in 2 000 per minute, through both gateways together.
    const results = [];
    for (const g of [a, b, a, b]) results.push(await big(g, KEYS[5]!));
    expect(results.slice(0, 3).filter((x) => x instanceof Error)).toEqual([]);
    expect(results[3]).toBeInstanceOf(OpenAI.RateLimitError);
    expect((results[3] as Error).message).toMatch(
      new RegExp(
        `Tenant ${keyTenant(KEYS[5]!)} is over its tpm limit: 1800 of 2000 tokens per minute taken, this call needs 600`,
      ),
    );
    expect(chatCalls()).toBe(3);
  });

  it("hold the key's budget from the configuration file through both", async () => {
    const [a, b] = gateways as [Gateway, Gateway];
    // The budget fits two calls' reservations, not three.
    const results = [];
    for (const g of [a, b, a]) results.push(await big(g, KEYS[3]!));
    expect(results.slice(0, 2).filter((x) => x instanceof Error)).toEqual([]);
    expect(results[2]).toBeInstanceOf(OpenAI.RateLimitError);
    expect((results[2] as Error).message).toMatch(
      new RegExp(`Tenant ${keyTenant(KEYS[3]!)} is over its budget limit`),
    );
    expect(chatCalls()).toBe(2);
  });
});

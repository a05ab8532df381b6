/**
 * A deployment that answers `null`, or 204 with no body, is at fault, as one that answers broken
 * JSON is: the call fails over to a deployment that answers, in the typed API as through the
 * gateway; with no such deployment the typed API's caller gets the SDK's error (never a
 * `TypeError`) and the gateway answers 502. The OpenAI and Anthropic clients, an upstream on
 * node:http, a simulated deployment, the sample gateway.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { createSwitchboard, type DeploymentConfig } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { gatewayWith } from '../support/gateway';

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-sonnet-5';
const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };

describe('a null or 204 answer', () => {
  let empty: Server;
  let base: string;
  let upstream: SimulatedUpstream;

  beforeAll(async () => {
    // /null/... answers 200 `null`, /none/... 204 without a body.
    empty = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url!.startsWith('/none/')) {
          res.writeHead(204);
          res.end();
        } else {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('null');
        }
      });
    });
    await new Promise<void>((done) => empty.listen(0, '127.0.0.1', done));
    base = `http://127.0.0.1:${(empty.address() as AddressInfo).port}`;
    upstream = await SimulatedUpstream.start({ deployments: [{ name: 'good' }] });
  });
  afterAll(async () => {
    await upstream.close();
    await new Promise((done) => empty.close(done));
  });

  const bad = (kind: 'null' | 'none', provider: 'openai' | 'anthropic'): DeploymentConfig =>
    ({
      provider,
      name: `${kind}-${provider}`,
      baseURL: provider === 'openai' ? `${base}/${kind}/v1/` : `${base}/${kind}/anthropic/`,
      apiKey: 'k',
      priority: 0,
      models: [{ name: provider === 'openai' ? GPT : CLAUDE }],
    }) as DeploymentConfig;
  const good = (provider: 'openai' | 'anthropic'): DeploymentConfig =>
    ({
      provider,
      name: `good-${provider}`,
      baseURL:
        provider === 'openai'
          ? upstream.deployment('good').openaiBaseURL
          : upstream.deployment('good').anthropicBaseURL,
      apiKey: 'k',
      priority: 1,
      models: [{ name: provider === 'openai' ? GPT : CLAUDE }],
    }) as DeploymentConfig;

  it.each(['null', 'none'] as const)(
    'the typed API fails over from a %s answer, on both providers',
    async (kind) => {
      const sb = createSwitchboard({
        deployments: [
          bad(kind, 'openai'),
          good('openai'),
          bad(kind, 'anthropic'),
          good('anthropic'),
        ],
        logger: quiet,
      });
      try {
        const chat = await sb.chat.completions.create({
          model: GPT,
          messages: [{ role: 'user', content: 'hi' }],
        });
        expect(chat.choices[0]!.message.role).toBe('assistant');
        const message = await sb.messages.create({
          model: CLAUDE,
          max_tokens: 10,
          messages: [{ role: 'user', content: 'hi' }],
        });
        expect(message.role).toBe('assistant');
        expect(upstream.deployment('good').requests).toHaveLength(2);
      } finally {
        await sb.close();
        upstream.reset();
      }
    },
  );

  it('with no other deployment, the caller gets the SDK error, not a TypeError', async () => {
    const sb = createSwitchboard({
      deployments: [bad('null', 'openai'), bad('none', 'anthropic')],
      logger: quiet,
    });
    try {
      const chat = await sb.chat.completions
        .create({ model: GPT, messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e);
      expect(chat).toBeInstanceOf(OpenAI.APIError);
      expect(chat).not.toBeInstanceOf(TypeError);
      const message = await sb.messages
        .create({ model: CLAUDE, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e);
      expect(message).toBeInstanceOf(Anthropic.APIError);
    } finally {
      await sb.close();
    }
  });

  it('the gateway fails over from it, and answers 502 when nothing else answers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-empty-'));
    const config = (deployments: DeploymentConfig[]) => {
      const file = join(dir, `${deployments.length}.json`);
      writeFileSync(file, JSON.stringify({ deployments }));
      return file;
    };
    const over = await gatewayWith({
      SWITCHBOARD_CONFIG: config([bad('none', 'openai'), good('openai')]),
    });
    const alone = await gatewayWith({ SWITCHBOARD_CONFIG: config([bad('null', 'openai')]) });
    try {
      const client = (url: string) =>
        new OpenAI({ apiKey: 'x', baseURL: `${url}/v1`, maxRetries: 0 });
      const answered = await client(over.url).chat.completions.create({
        model: GPT,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(answered.choices[0]!.message.role).toBe('assistant');
      const failed = await client(alone.url)
        .chat.completions.create({ model: GPT, messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
      expect((failed as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    } finally {
      await over.close();
      await alone.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * A `baseURL` that redirects: nothing is sent to the `Location` (no key, no prompt), the
 * deployment is at fault and named with where it pointed, the call fails over, and `doctor`
 * reports a failed row.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { createSwitchboard, type DeploymentConfig, type Switchboard } from 'nestjs-switchboard';
import { runDoctorCli } from '../../src/doctor/run';
import {
  completion,
  json,
  scriptedUpstream,
  type ScriptedUpstream,
} from '../support/scripted-upstream';

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-sonnet-5';
const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
const ask = { model: GPT, messages: [{ role: 'user' as const, content: 'the secret prompt' }] };

describe('redirects from a baseURL', () => {
  let target: ScriptedUpstream;
  let redirecting: ScriptedUpstream;
  let good: ScriptedUpstream;
  let sb: Switchboard | undefined;
  let status = 307;

  beforeAll(async () => {
    target = await scriptedUpstream((_req, res) => json(res, 200, completion()));
    // The Location points at another host name of the target: a cross-origin redirect.
    redirecting = await scriptedUpstream((req, res) => {
      res.writeHead(status, {
        location: `${target.origin.replace('127.0.0.1', 'localhost')}${req.url}`,
      });
      res.end();
    });
    good = await scriptedUpstream((_req, res) => json(res, 200, completion()));
  });
  afterAll(async () => {
    await Promise.all([target.close(), redirecting.close(), good.close()]);
  });
  afterEach(async () => {
    await sb?.close();
    sb = undefined;
    target.requests.length = 0;
    redirecting.requests.length = 0;
  });

  const openaiAt = (name: string, origin: string): DeploymentConfig => ({
    provider: 'openai',
    name,
    baseURL: `${origin}/v1`,
    apiKey: `key-of-${name}`,
    models: [{ name: GPT }],
  });

  it.each([301, 302, 303, 307, 308])(
    'a %i from an OpenAI baseURL: nothing reaches the target, the call fails naming the redirect',
    async (code) => {
      status = code;
      sb = createSwitchboard({
        deployments: [openaiAt('east', redirecting.origin)],
        logger: quiet,
      });
      const error = await sb.chat.completions.create(ask).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.APIConnectionError);
      expect((error as Error).message).toBe(
        `Deployment east redirected (${code}) to ${target.origin.replace('http://127.0.0.1', 'localhost')}; redirects are not followed.`,
      );
      expect(redirecting.requests.length).toBeGreaterThan(0);
      expect(target.requests).toHaveLength(0);
      expect(sb.deployments.get('east')!.models.get(GPT)!.cooldownRemaining).toBeGreaterThan(0);
    },
  );

  it('a 307 from a Foundry baseURL: its x-api-key and the prompt do not reach the target', async () => {
    status = 307;
    sb = createSwitchboard({
      logger: quiet,
      deployments: [
        {
          provider: 'anthropic',
          name: 'foundry',
          baseURL: `${redirecting.origin}/anthropic`,
          apiKey: 'foundry-key',
          models: [{ name: CLAUDE }],
        },
      ],
    });
    const error = await sb.messages
      .create({ model: CLAUDE, max_tokens: 8, messages: [{ role: 'user', content: 'secret' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.APIConnectionError);
    expect((error as Error).message).toMatch(
      /^Deployment foundry redirected \(307\) to localhost:\d+;/,
    );
    expect(redirecting.requests[0]!.headers['x-api-key']).toBe('foundry-key');
    expect(target.requests).toHaveLength(0);
  });

  it('a streamed call redirected with a 302 delivers nothing either', async () => {
    status = 302;
    sb = createSwitchboard({ deployments: [openaiAt('east', redirecting.origin)], logger: quiet });
    await expect(sb.chat.completions.create({ ...ask, stream: true })).rejects.toBeInstanceOf(
      OpenAI.APIConnectionError,
    );
    expect(target.requests).toHaveLength(0);
  });

  it('the call fails over to a deployment that answers', async () => {
    status = 307;
    sb = createSwitchboard({
      deployments: [openaiAt('east', redirecting.origin), openaiAt('west', good.origin)],
      // The first draw picks the first deployment: the redirecting one is tried.
      random: () => 0,
      logger: quiet,
    });
    for (let i = 0; i < 4; i++) {
      const answer = await sb.chat.completions.create(ask);
      expect(answer.choices[0]!.message.content).toBe('pong');
    }
    expect(redirecting.requests.length).toBeGreaterThan(0);
    expect(target.requests).toHaveLength(0);
  });

  it('through sb.fetch: a 307 is a 502 in the API error shape, and nothing reaches the target', async () => {
    status = 307;
    sb = createSwitchboard({ deployments: [openaiAt('east', redirecting.origin)], logger: quiet });
    const res = await sb.fetch('https://client.example/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ask),
    });
    expect(res.status).toBe(502);
    expect(res.headers.get('location')).toBeNull();
    const body = (await res.json()) as { error: { message: string } };
    expect(typeof body.error.message).toBe('string');
    expect(target.requests).toHaveLength(0);
  });

  it('doctor reports a redirect as a failed row naming it', async () => {
    status = 307;
    const dir = mkdtempSync(join(tmpdir(), 'sb-redirect-'));
    try {
      const file = join(dir, 'switchboard.json');
      writeFileSync(file, JSON.stringify({ deployments: [openaiAt('east', redirecting.origin)] }));
      const out: string[] = [];
      const code = await runDoctorCli(['doctor', file, '--json'], {
        out: (t) => out.push(t),
        err: (t) => out.push(t),
      });
      expect(code).toBe(1);
      const [row] = JSON.parse(out.join('\n')) as { ok: boolean; error: string }[];
      expect(row!.ok).toBe(false);
      expect(row!.error).toMatch(/redirected \(307\) to localhost:\d+; redirects are not followed/);
      expect(target.requests).toHaveLength(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

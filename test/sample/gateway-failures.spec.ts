import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import type { Gateway } from '../../sample/main';
import { gatewayWith } from '../support/gateway';

const MODEL = 'gpt-4o-mini';
const PROMPT = 'one two three four';

/**
 * The gateway reads the stream deadlines and the content-filter fallbacks from its configuration
 * file. Its clock is the real one: the stall never ends by itself, so the only way the call
 * completes is the first-token deadline closing it, which the upstream reports.
 */
describe('gateway: a stream that never starts, and the content filter', () => {
  let dir: string;
  let upstream: SimulatedUpstream;
  let gateway: Gateway;
  let openai: OpenAI;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gateway-failures-'));
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'east' }, { name: 'west' }, { name: 'large' }],
    });
    const file = join(dir, 'switchboard.json');
    const deployment = (name: string, model: string, priority = 0) => ({
      provider: 'openai',
      name,
      baseURL: upstream.deployment(name).openaiBaseURL,
      apiKey: 'k',
      priority,
      models: [{ name: model }],
    });
    writeFileSync(
      file,
      JSON.stringify({
        deployments: [
          deployment('east', MODEL),
          deployment('west', MODEL, 1),
          deployment('large', 'gpt-4o'),
        ],
        firstTokenTimeout: 200,
        contentFilterFallbacks: { 'gpt-4o': [MODEL] },
      }),
    );
    gateway = await gatewayWith({ SWITCHBOARD_CONFIG: file });
    openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a stream that never starts fails over, and the client reads a normal stream', async () => {
    const east = upstream.deployment('east');
    east.fail({ kind: 'stall' });
    const s = await openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: PROMPT }],
      stream: true,
    });
    let text = '';
    for await (const chunk of s) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe(PROMPT);
    await east.whenIdle();
    expect(east.stats).toMatchObject({ requests: 1, aborted: 1, ok: 0 });
    expect(upstream.deployment('west').stats.ok).toBe(1);
  });

  it('a filtered prompt is answered by the content-filter fallback', async () => {
    upstream.deployment('large').fail({ kind: 'content-filter' });
    const answer = await openai.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(answer.model).toBe(MODEL);
    expect(upstream.deployment('large').stats.byStatus[400]).toBe(1);
  });
});

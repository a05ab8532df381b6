/**
 * What `GET /switchboard` (the data of the status page) shows of calls in flight and of latency
 * per deployment, after real calls through the gateway to simulated deployments: the cap and the
 * calls it holds while they last, and the recent latency of streams (time to first token) and of
 * the other answers (time per output token).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import request from 'supertest';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { createGateway, type Gateway } from '../../sample/main';
import type { ModelStatus, SwitchboardStatus } from '../../sample/status/status.service';

const dir = mkdtempSync(join(tmpdir(), 'switchboard-latency-'));
const saved = process.env.SWITCHBOARD_CONFIG;
let upstream: SimulatedUpstream;
let gateway: Gateway;
let openai: OpenAI;

beforeAll(async () => {
  upstream = await SimulatedUpstream.start({
    deployments: [{ name: 'near', latency: 20 }],
  });
  const config = {
    deployments: [
      {
        provider: 'openai',
        name: 'near',
        baseURL: upstream.deployment('near').openaiBaseURL,
        apiKey: 'k',
        maxInFlight: 2,
        models: [{ name: 'gpt-4o-mini' }],
      },
    ],
  };
  const file = join(dir, 'switchboard.json');
  writeFileSync(file, JSON.stringify(config));
  process.env.SWITCHBOARD_CONFIG = file;
  gateway = await createGateway({ port: 0, host: '127.0.0.1', logger: false });
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
  if (saved === undefined) delete process.env.SWITCHBOARD_CONFIG;
  else process.env.SWITCHBOARD_CONFIG = saved;
  rmSync(dir, { recursive: true, force: true });
});

async function near(): Promise<ModelStatus> {
  const res = await request(gateway.app.getHttpServer()).get('/switchboard').expect(200);
  return (res.body as SwitchboardStatus).deployments[0]!.models[0]!;
}

const params = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'hi' }] };

it('shows the cap of calls in flight and the calls it holds while they last', async () => {
  expect((await near()).inFlight).toEqual({ count: 0, cap: 2 });
  expect((await near()).latency).toEqual({});
  // The answer is held until the status was read: on a busy machine a 20-ms answer can come
  // back before the status request is served.
  const deployment = upstream.deployment('near');
  deployment.holdAnswers();
  const pending = openai.chat.completions.create(params);
  await deployment.waitFor((d) => d.heldAnswers === 1);
  expect((await near()).inFlight).toEqual({ count: 1, cap: 2 });
  deployment.releaseAll();
  await pending;
  expect((await near()).inFlight).toEqual({ count: 0, cap: 2 });
});

it('shows the latency of answers per output token, and of streams to their first token', async () => {
  await openai.chat.completions.create(params);
  const after = await near();
  expect(after.latency.perTokenMs).toBeGreaterThan(0);
  expect(after.latency.firstTokenMs).toBeUndefined();
  const stream = await openai.chat.completions.create({ ...params, stream: true });
  for await (const _ of stream) void _;
  const streamed = await near();
  expect(streamed.latency.firstTokenMs).toBeGreaterThan(0);
  // sb.stats() carries the same estimates.
  const res = await request(gateway.app.getHttpServer()).get('/switchboard').expect(200);
  const stats = (res.body as SwitchboardStatus).stats.near!['gpt-4o-mini']!;
  expect(stats.inFlight).toBe('0/2');
  expect(Object.keys(stats.latency!).sort()).toEqual(['firstTokenMs', 'perTokenMs']);
});

it('has an In flight and a Latency column on the page', async () => {
  const res = await request(gateway.app.getHttpServer()).get('/').expect(200);
  expect(res.text).toMatch(/<th scope="col">In flight<\/th>\s*<th scope="col">Latency<\/th>/);
});

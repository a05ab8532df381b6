/**
 * The sample gateway on configured deployments: `SWITCHBOARD_CONFIG=sample/switchboard.example.yaml`
 * with endpoints and keys from the environment (here simulated endpoints that check the keys),
 * and `AZURE_OPENAI_ENDPOINT` / `AZURE_OPENAI_API_KEY` alone. No simulated deployments of its own
 * start then, and the page's mark-down is refused.
 */
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { createGateway, type Gateway } from '../../sample/main';
import { Simulation } from '../../sample/simulation/simulation';
import type { SwitchboardStatus } from '../../sample/status/status.service';

const VARIABLES = [
  'SWITCHBOARD_CONFIG',
  'AZURE_OPENAI_ENDPOINT',
  'AZURE_OPENAI_API_KEY',
  'AZURE_OPENAI_MODEL',
  'OPENAI_API_KEY',
  'AZURE_OPENAI_EASTUS_ENDPOINT',
  'AZURE_OPENAI_EASTUS_API_KEY',
  'AZURE_OPENAI_SWEDEN_ENDPOINT',
  'AZURE_OPENAI_SWEDEN_API_KEY',
  'FOUNDRY_EASTUS_ENDPOINT',
  'FOUNDRY_EASTUS_API_KEY',
];
const saved = Object.fromEntries(VARIABLES.map((name) => [name, process.env[name]]));

let upstream: SimulatedUpstream;

beforeAll(async () => {
  upstream = await SimulatedUpstream.start({
    deployments: [
      { name: 'eastus', apiKey: 'east-key' },
      { name: 'sweden', apiKey: 'sweden-key' },
      { name: 'foundry', apiKey: 'foundry-key' },
    ],
  });
});

beforeEach(() => {
  for (const name of VARIABLES) delete process.env[name];
});

afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  upstream.reset();
});

afterAll(() => upstream.close());

async function withGateway(run: (gateway: Gateway) => Promise<void>): Promise<void> {
  const gateway = await createGateway({ port: 0, host: '127.0.0.1', logger: false });
  try {
    await run(gateway);
  } finally {
    await gateway.close();
  }
}

it('routes to the deployments of SWITCHBOARD_CONFIG (sample/switchboard.example.yaml)', async () => {
  Object.assign(process.env, {
    SWITCHBOARD_CONFIG: join(__dirname, '..', '..', 'sample', 'switchboard.example.yaml'),
    AZURE_OPENAI_EASTUS_ENDPOINT: upstream.deployment('eastus').azureEndpoint,
    AZURE_OPENAI_EASTUS_API_KEY: 'east-key',
    AZURE_OPENAI_SWEDEN_ENDPOINT: upstream.deployment('sweden').azureEndpoint,
    AZURE_OPENAI_SWEDEN_API_KEY: 'sweden-key',
    FOUNDRY_EASTUS_ENDPOINT: upstream.deployment('foundry').azureEndpoint,
    FOUNDRY_EASTUS_API_KEY: 'foundry-key',
  });
  await withGateway(async (gateway) => {
    expect(gateway.app.get(Simulation).enabled).toBe(false);
    const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: 'unused', maxRetries: 0 });
    for (let i = 0; i < 4; i++) {
      const completion = await openai.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: `configured ${i}` }],
      });
      expect(completion.choices[0]?.message.content).toBe(`configured ${i}`);
    }
    const message = await anthropic.messages.create({
      model: 'claude-sonnet-5',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'configured claude' }],
    });
    expect(message.content[0]).toMatchObject({ type: 'text', text: 'configured claude' });

    const openaiCalls = ['eastus', 'sweden'].map((n) => upstream.deployment(n).stats.ok);
    expect(openaiCalls[0]! + openaiCalls[1]!).toBe(4);
    expect(upstream.deployment('foundry').stats.ok).toBe(1);

    const status = (await (await fetch(`${gateway.url}/switchboard`)).json()) as SwitchboardStatus;
    expect(status.simulated).toBe(false);
    expect(status.deployments.map((d) => d.name)).toEqual([
      'aoai-eastus',
      'aoai-sweden',
      'foundry-eastus',
    ]);
    expect(status.deployments[0]!.models[0]!.tpm.limit).toBe(30_000);
    expect(status.sessions.max).toBe(4096);

    const markDown = await fetch(`${gateway.url}/switchboard/deployments/aoai-eastus/mark-down`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(markDown.status).toBe(403);
    expect(await markDown.json()).toMatchObject({ message: /only enabled .* simulated/ });
  });
});

it('routes to AZURE_OPENAI_ENDPOINT with AZURE_OPENAI_API_KEY', async () => {
  process.env.AZURE_OPENAI_ENDPOINT = upstream.deployment('eastus').azureEndpoint;
  process.env.AZURE_OPENAI_API_KEY = 'east-key';
  await withGateway(async (gateway) => {
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    expect(upstream.deployment('eastus').requests.at(-1)?.headers.authorization).toBe(
      'Bearer east-key',
    );
    const status = (await (await fetch(`${gateway.url}/switchboard`)).json()) as SwitchboardStatus;
    expect(status).toMatchObject({ simulated: false, models: [{ name: 'gpt-4o-mini' }] });
  });
});

it('refuses to start on an incomplete configuration, saying what to set', async () => {
  process.env.AZURE_OPENAI_ENDPOINT = 'https://east.openai.azure.com';
  await expect(createGateway({ port: 0, logger: false })).rejects.toThrow(/AZURE_OPENAI_API_KEY/);
});

it('with nothing configured, simulates and says in one log line how to use real deployments', async () => {
  const lines: string[] = [];
  const capture = (message: unknown) => void lines.push(String(message));
  const gateway = await createGateway({
    port: 0,
    host: '127.0.0.1',
    logger: { log: capture, warn: capture, error: capture },
  });
  try {
    expect(gateway.app.get(Simulation).enabled).toBe(true);
    const hint = lines.filter((line) => line.includes('simulated deployments'));
    expect(hint).toHaveLength(1);
    expect(hint[0]).toMatch(/routing to 5 simulated deployments on http:\/\/127\.0\.0\.1:\d+/);
    expect(hint[0]).toMatch(/SWITCHBOARD_CONFIG/);
    expect(hint[0]).toMatch(/AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY, or OPENAI_API_KEY/);
  } finally {
    await gateway.close();
  }
});

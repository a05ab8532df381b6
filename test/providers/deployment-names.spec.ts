import type OpenAI from 'openai';
import {
  createSwitchboard,
  loadSwitchboardConfigFile,
  SwitchboardConfigError,
  SwitchboardError,
  type Switchboard,
} from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const GPT = 'gpt-4o';
const EMBED = 'text-embedding-3-small';
const CLAUDE = 'claude-sonnet-5';

describe('deployment names: the caller names the model, the upstream sees its own name', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard;

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [
        { name: 'east', deploymentNames: ['gpt4o-east', 'embed-east'] },
        { name: 'west', deploymentNames: ['prod-gpt-4o'] },
        { name: 'foundry', deploymentNames: ['claude-prod'] },
      ],
    });
  });
  afterAll(() => upstream.close());
  beforeEach(() => {
    sb = createSwitchboard({
      ratelimitWindow: 0,
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: upstream.deployment('east').openaiBaseURL,
          apiKey: 'k',
          models: [
            { name: GPT, deployment: 'gpt4o-east', tpm: 1_000_000, rpm: 10_000 },
            { name: EMBED, deployment: 'embed-east' },
          ],
        },
        {
          provider: 'openai',
          name: 'west',
          baseURL: upstream.deployment('west').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: GPT, deployment: 'prod-gpt-4o', tpm: 1_000_000, rpm: 10_000 }],
        },
        {
          provider: 'anthropic',
          name: 'foundry',
          baseURL: upstream.deployment('foundry').anthropicBaseURL,
          apiKey: 'k',
          models: [{ name: CLAUDE, deployment: 'claude-prod' }],
        },
      ],
    });
  });
  afterEach(async () => {
    await sb.close();
    upstream.reset();
    for (const d of upstream.deployments) d.forgetResponses();
  });

  const seen = (name: string) => [
    ...new Set(upstream.deployment(name).requests.map((r) => r.model)),
  ];

  it('20 calls, streams included, balance over two deployments and each sees only its own name', async () => {
    const calls = Array.from({ length: 20 }, async (_, i) => {
      if (i % 2 === 0) {
        const c = await sb.chat.completions.create({
          model: GPT,
          messages: [{ role: 'user', content: `hello ${i}` }],
        });
        return c.choices[0]!.message.content;
      }
      const stream = await sb.chat.completions.create({
        model: GPT,
        messages: [{ role: 'user', content: `hello ${i}` }],
        stream: true,
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      return text;
    });
    const answers = await Promise.all(calls);
    expect(answers.every((a) => typeof a === 'string' && a.length > 0)).toBe(true);
    const east = upstream.deployment('east').stats.ok;
    const west = upstream.deployment('west').stats.ok;
    expect(east + west).toBe(20);
    expect(east).toBeGreaterThan(0);
    expect(west).toBeGreaterThan(0);
    expect(seen('east')).toEqual(['gpt4o-east']);
    expect(seen('west')).toEqual(['prod-gpt-4o']);
    // Stats, and the deployments' maps, know the caller's name only.
    expect(Object.keys(sb.stats().east!)).toEqual([GPT, EMBED]);
    expect(sb.stats().east![GPT]!.rpm).toBe(`${east}/10000`);
  });

  it('parse and a Responses chain, retrieve included, under the deployment name', async () => {
    const parsed = await sb.chat.completions.parse({
      model: GPT,
      messages: [{ role: 'user', content: 'parse me' }],
    });
    expect(parsed.choices[0]!.message.content).toBeTruthy();
    const first = await sb.responses.create({ model: GPT, input: 'first' });
    const second = await sb.responses.create({
      model: GPT,
      input: 'second',
      previous_response_id: first.id,
    });
    const again = await sb.responses.retrieve(second.id);
    expect(again.id).toBe(second.id);
    const stream = await sb.responses.create({
      model: GPT,
      input: 'third',
      previous_response_id: second.id,
      stream: true,
    });
    let completed = 0;
    for await (const event of stream) if (event.type === 'response.completed') completed++;
    expect(completed).toBe(1);
    for (const name of ['east', 'west']) {
      for (const r of upstream.deployment(name).requests) {
        if (r.api !== 'response')
          expect(r.model).toBe(name === 'east' ? 'gpt4o-east' : 'prod-gpt-4o');
      }
    }
  });

  it('embeddings and Claude (messages, streams, countTokens) with deployment names', async () => {
    const e = await sb.embeddings.create({ model: EMBED, input: 'word' });
    expect(e.data).toHaveLength(1);
    const m = await sb.messages.create({
      model: CLAUDE,
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(m.content[0]!.type).toBe('text');
    const s = await sb.messages.create({
      model: CLAUDE,
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    for await (const _event of s) void _event;
    const counted = await sb.messages.countTokens({
      model: CLAUDE,
      messages: [{ role: 'user', content: 'count me' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect(seen('foundry')).toEqual(['claude-prod']);
    expect(upstream.deployment('foundry').requests.map((r) => r.api)).toEqual([
      'messages',
      'messages',
      'count_tokens',
    ]);
    expect(upstream.deployment('east').requests.map((r) => r.model)).toEqual(['embed-east']);
  });

  it('the SDK client of a deployment maps the caller name too; the upstream name passes as is', async () => {
    const client = (sb.deployments.get('west') as unknown as { client: OpenAI }).client;
    await client.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'a' }],
    });
    await client.chat.completions.create({
      model: 'prod-gpt-4o',
      messages: [{ role: 'user', content: 'b' }],
    });
    await client
      .withOptions({ timeout: 5_000 })
      .chat.completions.create({ model: GPT, messages: [{ role: 'user', content: 'c' }] });
    expect(upstream.deployment('west').requests.map((r) => r.model)).toEqual([
      'prod-gpt-4o',
      'prod-gpt-4o',
      'prod-gpt-4o',
    ]);
  });

  it('a name the resource does not know answers Azure’s 404 DeploymentNotFound', async () => {
    const client = (sb.deployments.get('west') as unknown as { client: OpenAI }).client;
    await expect(
      client.chat.completions.create({
        model: 'gpt4o-east',
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toMatchObject({ status: 404, code: 'DeploymentNotFound' });
  });
});

describe('deployment names in the options', () => {
  const base = (models: object[], extra: object = {}) => ({
    provider: 'openai' as const,
    name: 'east',
    baseURL: 'https://east.openai.azure.com/openai/v1/',
    apiKey: 'k',
    models,
    ...extra,
  });
  const build = (deployments: object[]) =>
    createSwitchboard({ deployments: deployments as never, ratelimitWindow: 0 });

  it('a bad deployment is refused naming its field path', () => {
    for (const bad of ['', ' ', ' padded', 42, null]) {
      expect(() => build([base([{ name: GPT, deployment: bad }])])).toThrow(
        /deployments\[0\]\.models\[0\]\.deployment must be a non-empty string/,
      );
    }
  });

  it('two names for one upstream deployment on one resource are refused, naming both', () => {
    const run = () =>
      build([
        base([{ name: GPT, deployment: 'gpt4o-east' }]),
        base([{ name: 'gpt-4o-latest', deployment: 'gpt4o-east' }], {
          name: 'east-again',
          baseURL: 'https://EAST.openai.azure.com/openai/v1',
        }),
      ]);
    expect(run).toThrow(SwitchboardError);
    expect(run).toThrow(
      /deployments\[1\]\.models\[0\]\.deployment 'gpt-4o-latest' and deployments\[0\]\.models\[0\] \('gpt-4o'\) both name the upstream deployment 'gpt4o-east' on https:\/\/east\.openai\.azure\.com\/openai\/v1/,
    );
    // A name that is another entry's upstream name, within one deployment.
    expect(() => build([base([{ name: 'a', deployment: 'b' }, { name: 'b' }])])).toThrow(
      /deployments\[0\]\.models\[1\]\.name 'b' and deployments\[0\]\.models\[0\] \('a'\) both name the upstream deployment 'b'/,
    );
  });

  it('one name on two resources, or two upstream names on one, is fine', () => {
    const ok = build([
      base([
        { name: GPT, deployment: 'gpt4o-east' },
        { name: 'gpt-4o-mini', deployment: 'mini' },
      ]),
      base([{ name: GPT, deployment: 'gpt4o-east' }], {
        name: 'west',
        baseURL: 'https://west.openai.azure.com/openai/v1/',
      }),
    ]);
    return ok.close();
  });

  it('a config file gets the line of a bad deployment', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-names-'));
    try {
      const file = join(dir, 'switchboard.yaml');
      writeFileSync(
        file,
        [
          'deployments:',
          '  - provider: openai',
          '    name: east',
          '    baseURL: https://east.openai.azure.com/openai/v1/',
          '    apiKey: k',
          '    models:',
          '      - name: gpt-4o',
          '        deployment: 12',
          '',
        ].join('\n'),
      );
      let error: unknown;
      try {
        loadSwitchboardConfigFile(file, {});
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(SwitchboardConfigError);
      expect((error as Error).message).toMatch(
        /deployments\[0\]\.models\[0\]\.deployment must be a non-empty string.*\(line 8\)/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('deployment names with fallbacks', () => {
  it('a fallback model goes out under its own deployment name', async () => {
    const upstream = await SimulatedUpstream.start({
      deployments: [
        { name: 'a', deploymentNames: ['big-a'] },
        { name: 'b', deploymentNames: ['small-b'] },
      ],
    });
    const sb = createSwitchboard({
      ratelimitWindow: 0,
      fallbacks: { [GPT]: ['gpt-4o-mini'] },
      deployments: [
        {
          provider: 'openai',
          name: 'a',
          baseURL: upstream.deployment('a').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: GPT, deployment: 'big-a' }],
        },
        {
          provider: 'openai',
          name: 'b',
          baseURL: upstream.deployment('b').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: 'gpt-4o-mini', deployment: 'small-b' }],
        },
      ],
    });
    try {
      sb.deployments.get('a')!.models.get(GPT)!.markDown(60_000);
      const c = await sb.chat.completions.create({
        model: GPT,
        messages: [{ role: 'user', content: 'fall back' }],
      });
      expect(c.choices[0]!.message.content).toBe('fall back');
      expect(upstream.deployment('a').stats.requests).toBe(0);
      expect(upstream.deployment('b').requests.map((r) => r.model)).toEqual(['small-b']);
      await expect(
        sb.chat.completions.create({
          model: 'small-b',
          messages: [{ role: 'user', content: 'x' }],
        }),
      ).rejects.toThrow(
        /No deployments available for small-b \(configured models: gpt-4o, gpt-4o-mini\)/,
      );
    } finally {
      await sb.close();
      await upstream.close();
    }
  });
});

import { createSwitchboard, SwitchboardError, type SwitchboardOptions } from 'nestjs-switchboard';
import { validateOptions } from 'nestjs-switchboard/extend';
import { anthropicDeployment, openaiDeployments } from '../support/configs';

const build = (options: unknown) => () => createSwitchboard(options as SwitchboardOptions);

describe('construction', () => {
  it('rejects no deployments', () => {
    expect(build({ deployments: [] })).toThrow(SwitchboardError);
    expect(build({ deployments: [] })).toThrow(/deployments must list at least one deployment/);
    expect(build({})).toThrow(/deployments is required/);
    expect(build(undefined)).toThrow(/expected an object/);
  });

  it('rejects a duplicate deployment name', () => {
    const [a] = openaiDeployments(1);
    expect(build({ deployments: [a, { ...a }] })).toThrow(
      /deployments\[1\]\.name 'd0' duplicates deployments\[0\]\.name/,
    );
  });

  it('rejects a model name served by both providers', () => {
    const deployments = [...openaiDeployments(1, 'shared'), anthropicDeployment('f1', 'shared')];
    expect(build({ deployments })).toThrow(
      /deployments\[1\]\.models\[0\]\.name 'shared' is served by both an openai deployment/,
    );
  });

  it.each([
    [['models', 0, 'tpm'], -1, /deployments\[0\]\.models\[0\]\.tpm must be a non-negative integer/],
    [
      ['models', 0, 'rpm'],
      1.5,
      /deployments\[0\]\.models\[0\]\.rpm must be a non-negative integer/,
    ],
    [['models', 0, 'name'], '', /deployments\[0\]\.models\[0\]\.name must be a non-empty string/],
    [['baseURL'], 'not a url', /deployments\[0\]\.baseURL must be an http\(s\) URL/],
    [['timeout'], 0, /deployments\[0\]\.timeout must be a positive number of milliseconds/],
    [['provider'], 'azure', /deployments\[0\]\.provider must be 'openai' or 'anthropic'/],
    [['models'], [], /deployments\[0\]\.models must list at least one model/],
    [['apiKey'], 42, /deployments\[0\]\.apiKey must be a non-empty string or a function/],
    [['colour'], 'blue', /deployments\[0\] has unknown key 'colour'/],
  ])('names the field path of %j = %j', (path, value, message) => {
    const [d] = openaiDeployments(1) as unknown as Record<string, unknown>[];
    let target = d as Record<string | number, unknown>;
    for (const key of (path as (string | number)[]).slice(0, -1)) {
      target = target[key] as Record<string | number, unknown>;
    }
    target[(path as (string | number)[]).at(-1)!] = value;
    expect(build({ deployments: [d] })).toThrow(message as RegExp);
  });

  it('asks an Anthropic deployment for a resource or a baseURL', () => {
    const d = { provider: 'anthropic', name: 'f', apiKey: 'k', models: [{ name: 'claude' }] };
    expect(build({ deployments: [d] })).toThrow(/deployments\[0\] needs `resource`/);
  });

  it('checks the switchboard-wide options too', () => {
    const deployments = openaiDeployments(1);
    expect(build({ deployments, maxSessions: 0 })).toThrow(
      /maxSessions must be a positive integer/,
    );
    expect(build({ deployments, failover: { attempts: 0 } })).toThrow(
      /failover\.attempts must be a whole number of attempts/,
    );
    expect(build({ deployments, failover: { onRetry: 'log' } })).toThrow(
      /failover\.onRetry must be a function \(attempt, delay, reason, error\) => void/,
    );
    expect(build({ deployments, failover: { onRetry: () => undefined } })).not.toThrow();
    expect(build({ deployments, ratelimitWindow: -5 })).toThrow(/ratelimitWindow must be/);
    expect(build({ deployments, usageWindow: 'rolling' })).toThrow(
      /usageWindow must be 'sliding' or 'fixed'/,
    );
    expect(build({ deployments, retries: 3 })).toThrow(/has unknown key 'retries'/);
  });

  it('names a deployment whose credentials are missing instead of an environment variable', () => {
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      const [d] = openaiDeployments(1);
      delete (d as { apiKey?: string }).apiKey;
      expect(build({ deployments: [d] })).toThrow(/deployments\[0\] \('d0'\) could not be set up/);
      expect(build({ deployments: [d] })).toThrow(/Set deployments\[0\]\.apiKey/);
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
    }
  });

  it('lists every problem at once', () => {
    const [a, b] = openaiDeployments(2);
    a!.models[0]!.tpm = -1;
    b!.name = '';
    try {
      createSwitchboard({ deployments: [a!, b!] });
      throw new Error('accepted');
    } catch (err) {
      expect(err).toBeInstanceOf(SwitchboardError);
      expect((err as Error).message).toMatch(/deployments\[0\]\.models\[0\]\.tpm/);
      expect((err as Error).message).toMatch(/deployments\[1\]\.name/);
    }
  });
});

describe('stats and the usage window', () => {
  afterEach(() => jest.useRealTimers());

  it("reports usage in the original's used/limit form", () => {
    const sb = createSwitchboard({ deployments: openaiDeployments(2), ratelimitWindow: 0 });
    sb.deployments.get('d0')!.models.get('gpt-4o-mini')!.spend(3000, 30);
    expect(sb.stats()).toEqual({
      d0: { 'gpt-4o-mini': { util: 0.1, tpm: '3000/30000', rpm: '30/300' } },
      d1: { 'gpt-4o-mini': { util: 0, tpm: '0/30000', rpm: '0/300' } },
    });
    sb.resetUsage();
    expect(sb.stats().d0!['gpt-4o-mini']).toEqual({ util: 0, tpm: '0/30000', rpm: '0/300' });
    return sb.close();
  });

  it('forgets usage older than ratelimitWindow, without a timer (sliding, the default)', async () => {
    jest.useFakeTimers();
    const sb = createSwitchboard({ deployments: openaiDeployments(1), ratelimitWindow: 60_000 });
    expect(jest.getTimerCount()).toBe(0);
    const state = sb.deployments.get('d0')!.models.get('gpt-4o-mini')!;
    state.spend(100, 1);
    jest.advanceTimersByTime(30_000);
    state.spend(50, 1);
    jest.advanceTimersByTime(29_999);
    expect(state.tpmUsage).toBe(150);
    jest.advanceTimersByTime(1_000); // the first charge has left the window, the second not
    expect(state.tpmUsage).toBe(50);
    expect(sb.stats().d0!['gpt-4o-mini']!.rpm).toBe('1/300');
    jest.advanceTimersByTime(31_000);
    expect(state.tpmUsage).toBe(0);
    await sb.close();
  });

  it('resets usage every ratelimitWindow with a fixed window, and stops on close', async () => {
    jest.useFakeTimers();
    const sb = createSwitchboard({
      deployments: openaiDeployments(1),
      ratelimitWindow: 60_000,
      usageWindow: 'fixed',
    });
    const state = sb.deployments.get('d0')!.models.get('gpt-4o-mini')!;
    state.spend(100, 1);
    jest.advanceTimersByTime(59_999);
    expect(state.tpmUsage).toBe(100);
    jest.advanceTimersByTime(1);
    expect(state.tpmUsage).toBe(0);
    state.spend(100, 1);
    await sb.close();
    await sb.close(); // idempotent
    jest.advanceTimersByTime(120_000);
    expect(state.tpmUsage).toBe(100);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('never resets with ratelimitWindow 0', () => {
    jest.useFakeTimers();
    const sb = createSwitchboard({ deployments: openaiDeployments(1), ratelimitWindow: 0 });
    expect(jest.getTimerCount()).toBe(0);
    return sb.close();
  });
});

describe('Azure endpoints as the portal shows them', () => {
  it('refuses an Azure OpenAI endpoint without /openai/v1/, with the URL to write', () => {
    expect(() =>
      validateOptions({
        deployments: [
          {
            provider: 'openai',
            name: 'east',
            baseURL: 'https://east.openai.azure.com/',
            models: [{ name: 'gpt-4o-mini' }],
          },
        ],
      }),
    ).toThrow(
      'deployments[0].baseURL is an Azure OpenAI endpoint without /openai/v1/ (every call would get 404 Unknown path): write https://east.openai.azure.com/openai/v1/',
    );
  });

  it("says that Azure OpenAI is provider: 'openai'", () => {
    expect(() =>
      validateOptions({
        deployments: [{ provider: 'azure', name: 'east', models: [{ name: 'gpt-4o-mini' }] }],
      }),
    ).toThrow(
      "deployments[0].provider must be 'openai' or 'anthropic': Azure OpenAI is provider: 'openai'",
    );
  });

  it.each([
    ['unknown', 'azure'],
    ['missing', undefined],
  ])("a %s provider hides none of the deployment's other problems", (_kind, provider) => {
    let message = '';
    try {
      validateOptions({
        deployments: [
          {
            provider,
            name: 'east',
            baseURL: 'ftp://east',
            timeout: -1,
            colour: 'blue',
            models: [{ name: 'gpt-4o-mini', tpm: -5 }],
          },
        ],
      });
    } catch (error) {
      message = (error as Error).message;
    }
    const problems = message.replace(/^Invalid switchboard options: /, '').split('; ');
    expect(problems).toEqual([
      expect.stringMatching(/^deployments\[0\]\.provider must be 'openai' or 'anthropic'/),
      expect.stringMatching(/^deployments\[0\]\.baseURL must be an http\(s\) URL/),
      expect.stringMatching(/^deployments\[0\]\.timeout must be a positive number/),
      expect.stringMatching(/^deployments\[0\]\.models\[0\]\.tpm must be a non-negative integer/),
      "deployments[0] has unknown key 'colour': remove or rename it",
    ]);
  });
});

import {
  createSwitchboard,
  parseSwitchboardConfig,
  SwitchboardError,
  type SwitchboardOptions,
} from 'nestjs-switchboard';
import { anthropicDeployment, openaiDeployments } from '../support/configs';

const build = (options: unknown) => () => createSwitchboard(options as SwitchboardOptions);

const pool = () => [
  ...openaiDeployments(1, 'gpt-4o'),
  ...openaiDeployments(1, 'gpt-4o-mini').map((d) => ({ ...d, name: 'mini' })),
  ...openaiDeployments(1, 'gpt-35-turbo').map((d) => ({ ...d, name: 'old' })),
  anthropicDeployment('foundry'),
];

function errorOf(options: unknown): SwitchboardError {
  try {
    build(options)();
  } catch (error) {
    if (error instanceof SwitchboardError) return error;
    throw error;
  }
  throw new Error('construction did not fail');
}

describe('routing options at construction', () => {
  it('accepts priority and weight on deployments and models, and fallbacks', () => {
    const [a, b] = openaiDeployments(2, 'gpt-4o');
    const sb = createSwitchboard({
      deployments: [
        { ...a!, priority: 0, weight: 2.5 },
        { ...b!, priority: 1, models: [{ name: 'gpt-4o', priority: 3, weight: 0.5 }] },
        ...pool().slice(1),
      ],
      fallbacks: { 'gpt-4o': ['gpt-4o-mini'], 'gpt-4o-mini': ['gpt-35-turbo'] },
      ratelimitWindow: 0,
    });
    const state = (name: string) => sb.deployments.get(name)!.models.get('gpt-4o')!;
    expect([state('d0').priority, state('d0').weight]).toEqual([0, 2.5]);
    // The model entry wins over its deployment.
    expect([state('d1').priority, state('d1').weight]).toEqual([3, 0.5]);
    expect(sb.deployments.get('mini')!.models.get('gpt-4o-mini')!.priority).toBe(0);
    expect(sb.deployments.get('mini')!.models.get('gpt-4o-mini')!.weight).toBe(1);
    expect(sb.registry.tiers.get('gpt-4o')!.map((t) => t.map((d) => d.name))).toEqual([
      ['d0'],
      ['d1'],
    ]);
    return sb.close();
  });

  it.each([
    [{ priority: -1 }, /deployments\[0\]\.priority must be a non-negative integer/],
    [{ priority: 0.5 }, /deployments\[0\]\.priority must be a non-negative integer/],
    [{ weight: 0 }, /deployments\[0\]\.weight must be a positive number/],
    [{ weight: 'heavy' }, /deployments\[0\]\.weight must be a positive number/],
    [
      { models: [{ name: 'gpt-4o', priority: 'high' }] },
      /deployments\[0\]\.models\[0\]\.priority must be a non-negative integer/,
    ],
    [
      { models: [{ name: 'gpt-4o', weight: -2 }] },
      /deployments\[0\]\.models\[0\]\.weight must be a positive number/,
    ],
  ])('rejects %j naming the field', (patch, message) => {
    const [a] = openaiDeployments(1, 'gpt-4o');
    expect(build({ deployments: [{ ...a, ...patch }] })).toThrow(message);
  });

  it.each([
    [{ 'gpt-4o': 'gpt-4o-mini' }, /fallbacks\.gpt-4o must be a list of model names/],
    [{ 'gpt-4o': [] }, /fallbacks\.gpt-4o must list at least one fallback model/],
    [{ 'gpt-4o': [''] }, /fallbacks\.gpt-4o\[0\] must be a non-empty string/],
    [['gpt-4o-mini'], /fallbacks must map a model to its fallback models/],
  ])('rejects fallbacks %j with the field path', (fallbacks, message) => {
    expect(build({ deployments: pool(), fallbacks })).toThrow(message);
  });

  it('rejects a fallback model that no deployment serves, naming the entry', () => {
    const error = errorOf({ deployments: pool(), fallbacks: { 'gpt-4o': ['gpt-4o-mini', 'o9'] } });
    expect(error.message).toMatch(
      /fallbacks\.gpt-4o\[1\] 'o9' is served by no deployment: add a deployment that serves it/,
    );
    expect(error.message).not.toMatch(/\[0\]/);
  });

  it('rejects fallbacks for a model that no deployment serves', () => {
    expect(build({ deployments: pool(), fallbacks: { 'gpt-5': ['gpt-4o'] } })).toThrow(
      /fallbacks\.gpt-5 names a model no deployment serves/,
    );
  });

  it("accepts a fallback served through the other provider's API (calls are translated)", () => {
    expect(
      build({ deployments: pool(), fallbacks: { 'gpt-4o': ['claude-sonnet-5'] } }),
    ).not.toThrow();
    expect(
      build({ deployments: pool(), fallbacks: { 'claude-sonnet-5': ['gpt-4o'] } }),
    ).not.toThrow();
  });

  it('rejects a cycle, direct or through a chain, once each', () => {
    expect(build({ deployments: pool(), fallbacks: { 'gpt-4o': ['gpt-4o'] } })).toThrow(
      /fallbacks\.gpt-4o\[0\] 'gpt-4o' makes a cycle: gpt-4o -> gpt-4o/,
    );
    const error = errorOf({
      deployments: pool(),
      fallbacks: {
        'gpt-4o': ['gpt-4o-mini'],
        'gpt-4o-mini': ['gpt-35-turbo'],
        'gpt-35-turbo': ['gpt-4o'],
      },
    });
    expect(error.message).toMatch(
      /fallbacks\.gpt-35-turbo\[0\] 'gpt-4o' makes a cycle: gpt-4o -> gpt-4o-mini -> gpt-35-turbo -> gpt-4o/,
    );
    expect(error.message.match(/makes a cycle/g)).toHaveLength(1);
  });

  it('accepts a chain without a cycle, and a model reached by two paths', () => {
    const sb = createSwitchboard({
      deployments: pool(),
      fallbacks: {
        'gpt-4o': ['gpt-4o-mini', 'gpt-35-turbo'],
        'gpt-4o-mini': ['gpt-35-turbo'],
      },
      ratelimitWindow: 0,
    });
    return sb.close();
  });

  it('reads priority, weight and fallbacks from YAML, with field paths and lines on errors', () => {
    const yaml = (extra: string) => `
deployments:
  - provider: openai
    name: ptu
    baseURL: http://127.0.0.1:2/ptu/openai/v1/
    apiKey: k
    priority: 0
    models: [{ name: gpt-4o, weight: 2 }]
  - provider: openai
    name: payg
    baseURL: http://127.0.0.1:2/payg/openai/v1/
    apiKey: k
    priority: \${PAYG_PRIORITY:-1}
    models: [{ name: gpt-4o }, { name: gpt-4o-mini }]
${extra}`;
    const options = parseSwitchboardConfig(yaml(`fallbacks:\n  gpt-4o: [gpt-4o-mini]\n`), {
      source: 'switchboard.yaml',
      env: {},
    });
    expect(options.deployments[1]!.priority).toBe(1);
    expect(options.deployments[0]!.models[0]!.weight).toBe(2);
    expect(options.fallbacks).toEqual({ 'gpt-4o': ['gpt-4o-mini'] });
    expect(() =>
      parseSwitchboardConfig(yaml(`fallbacks:\n  gpt-4o: [gpt-4o-nano]\n`), {
        source: 'switchboard.yaml',
        env: {},
      }),
    ).toThrow(/switchboard\.yaml: fallbacks\.gpt-4o\[0\] 'gpt-4o-nano' is served by no deployment/);
    expect(() =>
      parseSwitchboardConfig(yaml(''), {
        source: 'switchboard.yaml',
        env: { PAYG_PRIORITY: '-1' },
      }),
    ).toThrow(/switchboard\.yaml: deployments\[1\]\.priority must be a non-negative integer/);
  });

  it("builds the README's PTU example: the PTU tier first, pay-as-you-go by weight, gpt-4o-mini as fallback", async () => {
    // ---- README: switchboard.yaml (priority tiers) ----
    const text = `
# switchboard.yaml: a PTU deployment first, two pay-as-you-go ones for the overflow, and
# gpt-4o-mini when no gpt-4o deployment can take a call
deployments:
  - provider: openai
    name: ptu-eastus
    baseURL: \${AZURE_OPENAI_PTU_ENDPOINT}/openai/v1/
    apiKey: \${AZURE_OPENAI_PTU_API_KEY}
    priority: 0
    models:
      - { name: gpt-4o, tpm: 300000, rpm: 1800 }
  - provider: openai
    name: payg-eastus
    baseURL: \${AZURE_OPENAI_EASTUS_ENDPOINT}/openai/v1/
    apiKey: \${AZURE_OPENAI_EASTUS_API_KEY}
    priority: 1
    weight: 2 # twice the quota of payg-sweden
    models:
      - { name: gpt-4o, tpm: 100000, rpm: 600 }
      - { name: gpt-4o-mini, tpm: 200000, rpm: 1200, priority: 0 }
  - provider: openai
    name: payg-sweden
    baseURL: \${AZURE_OPENAI_SWEDEN_ENDPOINT}/openai/v1/
    apiKey: \${AZURE_OPENAI_SWEDEN_API_KEY}
    priority: 1
    models:
      - { name: gpt-4o, tpm: 50000, rpm: 300 }
fallbacks:
  gpt-4o: [gpt-4o-mini]
`;
    // ---- end of README code ----
    const env = Object.fromEntries(
      ['PTU', 'EASTUS', 'SWEDEN'].flatMap((n) => [
        [`AZURE_OPENAI_${n}_ENDPOINT`, `http://127.0.0.1:2/${n.toLowerCase()}`],
        [`AZURE_OPENAI_${n}_API_KEY`, 'k'],
      ]),
    );
    const sb = createSwitchboard({
      ...parseSwitchboardConfig(text, { source: 'switchboard.yaml', env }),
      ratelimitWindow: 0,
    });
    try {
      expect(sb.registry.tiers.get('gpt-4o')!.map((t) => t.map((d) => d.name))).toEqual([
        ['ptu-eastus'],
        ['payg-eastus', 'payg-sweden'],
      ]);
      expect(sb.deployments.get('payg-eastus')!.models.get('gpt-4o')!.weight).toBe(2);
      expect(sb.deployments.get('payg-eastus')!.models.get('gpt-4o-mini')!.priority).toBe(0);
      expect(sb.fallbacks.get('gpt-4o')).toEqual(['gpt-4o-mini']);
    } finally {
      await sb.close();
    }
  });
});

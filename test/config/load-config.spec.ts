import { closeSync, ftruncateSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  loadSwitchboardConfig,
  loadSwitchboardConfigFile,
  parseSwitchboardConfig,
  SwitchboardConfigError,
  SwitchboardError,
  type SwitchboardOptions,
} from 'nestjs-switchboard';
import { MAX_CONFIG_FILE_BYTES } from '../../src/config/read-bounded-file';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'switchboard-config-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** The error `fn` throws, checked to be a SwitchboardConfigError. */
function problemsOf(fn: () => unknown): SwitchboardConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SwitchboardConfigError);
    expect(error).toBeInstanceOf(SwitchboardError);
    return error as SwitchboardConfigError;
  }
  throw new Error('expected a SwitchboardConfigError');
}

const YAML = `# two Azure OpenAI deployments and Claude on Foundry
deployments:
  - provider: openai
    name: east
    baseURL: \${EAST_ENDPOINT}/openai/v1/
    apiKey: \${EAST_KEY}
    models:
      - name: gpt-4o-mini
        tpm: \${EAST_TPM:-30000}
        rpm: 300
  - provider: anthropic
    name: foundry
    resource: my-foundry
    apiKey: \${FOUNDRY_KEY}
    timeout: \${FOUNDRY_TIMEOUT-45000}
    models:
      - { name: claude-sonnet-5, tpm: 20000, rpm: 100, cooldown: 30000 }
failover:
  attempts: 3
ratelimitWindow: 60000
`;

const ENV = {
  EAST_ENDPOINT: 'https://east.openai.azure.com',
  EAST_KEY: 'east-key',
  FOUNDRY_KEY: 'foundry-key',
};

describe('loadSwitchboardConfigFile', () => {
  it('reads a YAML file and fills ${VAR}, ${VAR:-default} and ${VAR-default} from the environment', () => {
    const options = loadSwitchboardConfigFile(file('ok.yaml', YAML), ENV);
    expect(options).toEqual<SwitchboardOptions>({
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: 'https://east.openai.azure.com/openai/v1/',
          apiKey: 'east-key',
          models: [{ name: 'gpt-4o-mini', tpm: 30000, rpm: 300 }],
        },
        {
          provider: 'anthropic',
          name: 'foundry',
          resource: 'my-foundry',
          apiKey: 'foundry-key',
          timeout: 45000,
          models: [{ name: 'claude-sonnet-5', tpm: 20000, rpm: 100, cooldown: 30000 }],
        },
      ],
      failover: { attempts: 3 },
      ratelimitWindow: 60000,
    });
  });

  it('reads a number from a variable in a numeric field, and keeps strings elsewhere', () => {
    const options = loadSwitchboardConfigFile(file('numbers.yaml', YAML), {
      ...ENV,
      EAST_TPM: '12000',
      EAST_KEY: '12345',
      FOUNDRY_TIMEOUT: '5000',
    });
    expect(options.deployments[0]!.models[0]!.tpm).toBe(12000);
    expect(options.deployments[0]!.apiKey).toBe('12345');
    expect(options.deployments[1]!.timeout).toBe(5000);
  });

  it('uses the :- default for an empty variable, the - default only for an unset one', () => {
    const text =
      'deployments:\n  - { provider: openai, name: "${A:-x}${B-y}", models: [{ name: m }] }\n';
    const name = (env: Record<string, string>) =>
      parseSwitchboardConfig(text, { source: 's.yaml', env }).deployments[0]!.name;
    expect(name({})).toBe('xy');
    expect(name({ A: '', B: '' })).toBe('x');
    expect(name({ A: 'a', B: 'b' })).toBe('ab');
  });

  it('lets deployments share fields through YAML anchors and merge keys', () => {
    const text = `deployments:
  - &azure
    provider: openai
    name: east
    baseURL: https://east.openai.azure.com/openai/v1/
    apiKey: \${EAST_KEY}
    models: &models
      - { name: gpt-4o-mini, tpm: 30000, rpm: 300 }
  - <<: *azure
    name: west
    baseURL: https://west.openai.azure.com/openai/v1/
    models: *models
`;
    const options = parseSwitchboardConfig(text, { source: 's.yaml', env: { EAST_KEY: 'k' } });
    expect(options.deployments[1]).toEqual({
      provider: 'openai',
      name: 'west',
      baseURL: 'https://west.openai.azure.com/openai/v1/',
      apiKey: 'k',
      models: [{ name: 'gpt-4o-mini', tpm: 30000, rpm: 300 }],
    });
  });

  it('writes a literal ${ for $${', () => {
    const text =
      'deployments:\n  - { provider: openai, name: "a$${B}", apiKey: "p$$w", models: [{ name: m }] }\n';
    const d = parseSwitchboardConfig(text, { source: 's.yaml', env: {} }).deployments[0]!;
    expect(d.name).toBe('a${B}');
    expect(d.apiKey).toBe('p$w');
  });

  it('reads a JSON file', () => {
    const path = file(
      'ok.json',
      JSON.stringify(
        {
          deployments: [
            {
              provider: 'openai',
              name: 'openai',
              apiKey: '${OPENAI_API_KEY}',
              models: [{ name: 'gpt-4o-mini', rpm: '${RPM}' }],
            },
          ],
        },
        null,
        2,
      ),
    );
    const options = loadSwitchboardConfigFile(path, { OPENAI_API_KEY: 'sk-1', RPM: '60' });
    expect(options.deployments[0]).toEqual({
      provider: 'openai',
      name: 'openai',
      apiKey: 'sk-1',
      models: [{ name: 'gpt-4o-mini', rpm: 60 }],
    });
  });

  it('names the variable, the field and the file when a variable is not set', () => {
    const path = file('switchboard.yaml', YAML);
    const error = problemsOf(() => loadSwitchboardConfigFile(path, { EAST_ENDPOINT: 'https://e' }));
    expect(error.problems).toEqual([
      `${path}: deployments[0].apiKey uses \${EAST_KEY}, but the environment variable EAST_KEY is not set (set it, or write \${EAST_KEY:-default}) (line 6)`,
      `${path}: deployments[1].apiKey uses \${FOUNDRY_KEY}, but the environment variable FOUNDRY_KEY is not set (set it, or write \${FOUNDRY_KEY:-default}) (line 14)`,
    ]);
    expect(error.message).toContain('2 problems');
    expect(error.source).toBe(path);
  });

  it('reports an unset variable and every other problem of the file in one pass', () => {
    const text = YAML.replace('tpm: 20000', 'tpm: -5').replace('attempts: 3', 'attempts: 0');
    const error = problemsOf(() =>
      loadSwitchboardConfigFile(file('switchboard.yaml', text), { FOUNDRY_KEY: 'foundry-key' }),
    );
    expect(error.problems.map((p) => p.replace(/^\S+: /, ''))).toEqual([
      'deployments[0].baseURL uses ${EAST_ENDPOINT}, but the environment variable EAST_ENDPOINT is not set (set it, or write ${EAST_ENDPOINT:-default}) (line 5)',
      'deployments[0].apiKey uses ${EAST_KEY}, but the environment variable EAST_KEY is not set (set it, or write ${EAST_KEY:-default}) (line 6)',
      expect.stringMatching(
        /^deployments\[1\]\.models\[0\]\.tpm must be a non-negative integer.*\(line 17\)$/,
      ),
      expect.stringMatching(/^failover\.attempts must be a whole number of attempts.*\(line 19\)$/),
    ]);
  });

  it("reports an unknown provider and the rest of that deployment's problems in one pass", () => {
    const text = YAML.replace('provider: anthropic', 'provider: azure')
      .replace('tpm: 20000', 'tpm: -5')
      .replace('timeout: ${FOUNDRY_TIMEOUT-45000}', 'timeout: -1');
    const error = problemsOf(() => loadSwitchboardConfigFile(file('switchboard.yaml', text), ENV));
    expect(error.problems.map((p) => p.replace(/^\S+: /, ''))).toEqual([
      expect.stringMatching(
        /^deployments\[1\]\.provider must be 'openai' or 'anthropic': Azure OpenAI is provider: 'openai'.*\(line 11\)$/,
      ),
      expect.stringMatching(/^deployments\[1\]\.timeout must be a positive number.*\(line 15\)$/),
      expect.stringMatching(
        /^deployments\[1\]\.models\[0\]\.tpm must be a non-negative integer.*\(line 17\)$/,
      ),
    ]);
  });

  it('rejects a malformed reference', () => {
    const text = 'deployments:\n  - { provider: openai, name: "${1X}", models: [{ name: m }] }\n';
    const error = problemsOf(() => parseSwitchboardConfig(text, { source: 'sb.yaml', env: {} }));
    expect(error.message).toMatch(/^sb\.yaml: deployments\[0\]\.name has a malformed reference/);
  });

  it('names the file, the field path and what is expected for an invalid value', () => {
    const text = YAML.replace('tpm: 20000', 'tpm: -5');
    const error = problemsOf(() => loadSwitchboardConfigFile(file('switchboard.yaml', text), ENV));
    expect(error.problems).toHaveLength(1);
    expect(error.message).toContain(
      'switchboard.yaml: deployments[1].models[0].tpm must be a non-negative integer',
    );
    expect(error.message).toMatch(/\(line 17\)$/);
  });

  it('rejects unknown keys instead of dropping them', () => {
    const text = YAML.replace('        rpm: 300\n', '        rpm: 300\n        tmp: 5\n').replace(
      'ratelimitWindow',
      'rateLimitWindow',
    );
    const error = problemsOf(() => parseSwitchboardConfig(text, { source: 'sb.yaml', env: ENV }));
    expect(error.problems).toEqual([
      "sb.yaml: deployments[0].models[0] has unknown key 'tmp': remove or rename it (line 11)",
      "sb.yaml: (options) has unknown key 'rateLimitWindow': remove or rename it (line 21)",
    ]);
  });

  it('says that code-only options belong in code', () => {
    const error = problemsOf(() =>
      parseSwitchboardConfig(`${YAML}state: redis\n`, { source: 'sb.yaml', env: ENV }),
    );
    expect(error.message).toBe(
      'sb.yaml: state cannot be set in a config file: set it in code, e.g. useFactory: (config) => ({ ...config, state: redisState({ url }) }) (line 21)',
    );
  });

  it('reports rules across deployments with the file and field', () => {
    const text = YAML.replace('name: foundry', 'name: east');
    const error = problemsOf(() => parseSwitchboardConfig(text, { source: 'sb.yaml', env: ENV }));
    expect(error.message).toBe(
      "sb.yaml: deployments[1].name 'east' duplicates deployments[0].name: deployment names must be unique (line 12)",
    );
  });

  describe('lines of problems at model names with dashes and dots', () => {
    // Line numbers below count from `deployments:` as line 1.
    const routed = (models: string, fallbacks: string) => `deployments:
  - provider: openai
    name: east-1.eu
    baseURL: https://east.openai.azure.com/openai/v1/
    apiKey: k
    models:
${models}fallbacks:
${fallbacks}`;
    const MODELS = `      - name: gpt-4.1
      - name: gpt-4.1-mini
        priority: 1
        weight: 2
`;
    const parse = (text: string) => () =>
      parseSwitchboardConfig(text, { source: 'sb.yaml', env: {} });

    it('reads the routing fields under such names', () => {
      const options = parse(routed(MODELS, '  gpt-4.1:\n    - gpt-4.1-mini\n'))();
      expect(options.deployments[0]!.models[1]).toEqual({
        name: 'gpt-4.1-mini',
        priority: 1,
        weight: 2,
      });
      expect(options.fallbacks).toEqual({ 'gpt-4.1': ['gpt-4.1-mini'] });
    });

    it('gives the line of a fallback to a model no deployment serves', () => {
      const text = routed(
        MODELS,
        '  gpt-4.1:\n    - gpt-4.1-mini\n  gpt-4.1-mini:\n    - gpt-4.1-nano\n',
      );
      expect(problemsOf(parse(text)).problems).toEqual([
        "sb.yaml: fallbacks.gpt-4.1-mini[0] 'gpt-4.1-nano' is served by no deployment: add a deployment that serves it, or remove it from the list (served: gpt-4.1, gpt-4.1-mini) (line 15)",
      ]);
    });

    it('gives the line of the link that closes a cycle', () => {
      const text = routed(MODELS, '  gpt-4.1:\n    - gpt-4.1-mini\n  gpt-4.1-mini: [gpt-4.1]\n');
      expect(problemsOf(parse(text)).problems).toEqual([
        "sb.yaml: fallbacks.gpt-4.1-mini[0] 'gpt-4.1' makes a cycle: gpt-4.1 -> gpt-4.1-mini -> gpt-4.1; a model cannot fall back to itself, remove one of the links (line 14)",
      ]);
    });

    it('gives the line of fallbacks for a model no deployment serves', () => {
      const text = routed(MODELS, '  gpt-4.5-preview: [gpt-4.1]\n');
      expect(problemsOf(parse(text)).problems).toEqual([
        'sb.yaml: fallbacks.gpt-4.5-preview names a model no deployment serves: use one of gpt-4.1, gpt-4.1-mini, or add a deployment for it (line 12)',
      ]);
    });

    it('gives the line of a duplicate deployment name with dots and dashes', () => {
      const second = '  - provider: openai\n    name: east-1.eu\n    models: [{ name: gpt-4.1 }]\n';
      const text = routed(MODELS + second, '  gpt-4.1: [gpt-4.1-mini]\n');
      expect(problemsOf(parse(text)).problems).toEqual([
        "sb.yaml: deployments[1].name 'east-1.eu' duplicates deployments[0].name: deployment names must be unique (line 12)",
      ]);
    });

    it('gives the field path and line of priority: -1 and weight: 0 on such a model', () => {
      const models = MODELS.replace('priority: 1', 'priority: -1').replace(
        'weight: 2',
        'weight: 0',
      );
      const text = routed(models, '  gpt-4.1: [gpt-4.1-mini]\n');
      expect(problemsOf(parse(text)).problems).toEqual([
        'sb.yaml: deployments[0].models[1].priority must be a non-negative integer (0 = most preferred) (line 9)',
        'sb.yaml: deployments[0].models[1].weight must be a positive number (default 1) (line 10)',
      ]);
    });

    it('gives the field path and line of an empty fallback list under such a name', () => {
      const text = routed(MODELS, '  gpt-4.1-mini: []\n');
      expect(problemsOf(parse(text)).problems).toEqual([
        'sb.yaml: fallbacks.gpt-4.1-mini must list at least one fallback model (line 12)',
      ]);
    });

    it('gives the line in a JSON file too', () => {
      const json = JSON.stringify(
        {
          deployments: [
            {
              provider: 'openai',
              name: 'east-1.eu',
              apiKey: 'k',
              models: [{ name: 'gpt-4.1' }, { name: 'gpt-4.1-mini' }],
            },
          ],
          fallbacks: { 'gpt-4.1': ['gpt-4.1-mini', 'gpt-4.1-nano'] },
        },
        null,
        2,
      );
      const path = file('routed.json', json);
      const line = json.split('\n').findIndex((l) => l.includes('"gpt-4.1-nano"')) + 1;
      expect(problemsOf(() => loadSwitchboardConfigFile(path, {})).problems).toEqual([
        `${path}: fallbacks.gpt-4.1[1] 'gpt-4.1-nano' is served by no deployment: add a deployment that serves it, or remove it from the list (served: gpt-4.1, gpt-4.1-mini) (line ${line})`,
      ]);
    });
  });

  it('names the file, line and column of a YAML syntax error', () => {
    const text = 'deployments:\n  - provider: openai\n    name: "east\n';
    const error = problemsOf(() => loadSwitchboardConfigFile(file('bad.yaml', text), {}));
    expect(error.message).toMatch(/bad\.yaml:4:1: invalid YAML: Missing closing "quote$/);
  });

  it('rejects duplicate YAML keys with their line', () => {
    const text = 'deployments: []\nratelimitWindow: 1\nratelimitWindow: 2\n';
    const error = problemsOf(() => parseSwitchboardConfig(text, { source: 'dup.yml', env: {} }));
    expect(error.message).toBe('dup.yml:3:1: invalid YAML: Map keys must be unique');
  });

  it.each([
    ['a trailing comma', '{\n  "deployments": [],\n}', 3, 1],
    ['a missing comma', '{\n  "deployments": []\n  "failover": {}\n}', 3, 3],
    ['a bad literal', '{\n  "deployments": [],\n  "ratelimitWindow": tru\n}', 3, 22],
    ['a cut-off file', '{\n  "deployments": [', 2, 19],
  ])('names the file, line and column of a JSON syntax error: %s', (_, text, line, col) => {
    const path = file('bad.json', text);
    const error = problemsOf(() => loadSwitchboardConfigFile(path, {}));
    expect(error.message.startsWith(`${path}:${line}:${col}: invalid JSON: `)).toBe(true);
  });

  it.each([
    ['an empty file', '', 'an empty document'],
    ['a list', '- a\n- b\n', 'a list'],
    ['a scalar', 'hello\n', 'a string'],
  ])('rejects %s at the top level', (_, text, what) => {
    const error = problemsOf(() => parseSwitchboardConfig(text, { source: 'sb.yaml', env: {} }));
    expect(error.message).toBe(
      `sb.yaml: expected a mapping at the top level, such as \`deployments: [...]\`, got ${what}`,
    );
  });

  it('names the file it cannot read', () => {
    const error = problemsOf(() => loadSwitchboardConfigFile(join(dir, 'missing.yaml'), {}));
    expect(error.message).toMatch(/missing\.yaml: cannot read the switchboard config: ENOENT/);
  });
});

describe('loadSwitchboardConfig (environment)', () => {
  it('returns undefined when nothing is configured', () => {
    expect(loadSwitchboardConfig({})).toBeUndefined();
    expect(loadSwitchboardConfig({ OPENAI_API_KEY: '  ', SWITCHBOARD_CONFIG: '' })).toBeUndefined();
  });

  it('reads the file SWITCHBOARD_CONFIG names, and nothing else', () => {
    const path = file('env.yaml', YAML);
    const options = loadSwitchboardConfig({
      ...ENV,
      SWITCHBOARD_CONFIG: path,
      OPENAI_API_KEY: 'x',
    });
    expect(options?.deployments.map((d) => d.name)).toEqual(['east', 'foundry']);
  });

  it('builds an Azure OpenAI deployment from AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY', () => {
    expect(
      loadSwitchboardConfig({
        AZURE_OPENAI_ENDPOINT: 'https://res.openai.azure.com/',
        AZURE_OPENAI_API_KEY: 'az-key',
      }),
    ).toEqual({
      deployments: [
        {
          provider: 'openai',
          name: 'azure',
          baseURL: 'https://res.openai.azure.com/openai/v1/',
          apiKey: 'az-key',
          models: [{ name: 'gpt-4o-mini' }],
        },
      ],
    });
  });

  it('keeps an endpoint that already ends in /openai/v1 and reads AZURE_OPENAI_MODEL', () => {
    const options = loadSwitchboardConfig({
      AZURE_OPENAI_ENDPOINT: 'https://res.openai.azure.com/openai/v1',
      AZURE_OPENAI_API_KEY: 'az-key',
      AZURE_OPENAI_MODEL: 'gpt-4.1',
    });
    expect(options?.deployments[0]).toMatchObject({
      baseURL: 'https://res.openai.azure.com/openai/v1/',
      models: [{ name: 'gpt-4.1' }],
    });
  });

  it('balances over Azure OpenAI and OpenAI when both are configured', () => {
    const options = loadSwitchboardConfig({
      AZURE_OPENAI_ENDPOINT: 'https://res.openai.azure.com',
      AZURE_OPENAI_API_KEY: 'az-key',
      OPENAI_API_KEY: 'sk-openai',
    });
    expect(options?.deployments).toEqual([
      expect.objectContaining({ name: 'azure', models: [{ name: 'gpt-4o-mini' }] }),
      {
        provider: 'openai',
        name: 'openai',
        apiKey: 'sk-openai',
        models: [{ name: 'gpt-4o-mini' }],
      },
    ]);
  });

  it.each([
    [{ AZURE_OPENAI_ENDPOINT: 'https://res.openai.azure.com' }, /AZURE_OPENAI_API_KEY is not/],
    [{ AZURE_OPENAI_API_KEY: 'k' }, /AZURE_OPENAI_ENDPOINT is not/],
    [
      { AZURE_OPENAI_ENDPOINT: 'res.openai.azure.com', AZURE_OPENAI_API_KEY: 'k' },
      /AZURE_OPENAI_ENDPOINT must be an http\(s\) URL/,
    ],
  ])('says which variable is missing or wrong: %j', (env, message) => {
    const error = problemsOf(() => loadSwitchboardConfig(env));
    expect(error.source).toBe('environment');
    expect(error.message).toMatch(message);
  });
});

describe('files and values a config error must not take in or print', () => {
  it('refuses a 50 MB file from its size alone, before reading it', () => {
    const path = join(dir, 'huge.yaml');
    // Sparse: 50 MB by its size, nothing on disk, and nothing that a read would find parseable.
    const fd = openSync(path, 'w');
    ftruncateSync(fd, 50 * 1024 * 1024);
    closeSync(fd);
    const error = problemsOf(() => loadSwitchboardConfigFile(path));
    expect(error.problems).toEqual([
      `${path}: cannot read the switchboard config: the file is 52428800 bytes, more than the ${MAX_CONFIG_FILE_BYTES} read at most`,
    ]);
  });

  it('refuses /dev/zero (size 0, endless) as not a regular file', () => {
    const error = problemsOf(() => loadSwitchboardConfigFile('/dev/zero'));
    expect(error.message).toMatch(
      /^\/dev\/zero: cannot read the switchboard config: not a regular file/,
    );
  });

  it('reads a file just under the limit', () => {
    const text = `${YAML}\n#${'x'.repeat(MAX_CONFIG_FILE_BYTES - YAML.length - 3)}\n`;
    expect(text.length).toBeLessThanOrEqual(MAX_CONFIG_FILE_BYTES);
    const options = loadSwitchboardConfigFile(file('near-limit.yaml', text), ENV);
    expect(options.deployments.length).toBeGreaterThan(0);
  });

  it('never prints what a variable named key, secret, token or password held', () => {
    const env = {
      EAST_API_KEY: 'sk-proj-AAAAsecretBBBB',
      CLIENT_SECRET: 'cs-CCCCsecretDDDD',
      AUTH_TOKEN: 'tok-EEEEsecretFFFF',
      DB_PASSWORD: 'pw-GGGGsecretHHHH',
    };
    // Each by mistake where validation quotes a value: a model listed twice, a duplicate name.
    const text = `deployments:
  - provider: openai
    name: "\${EAST_API_KEY}"
    baseURL: https://east.example/openai/v1
    apiKey: k
    models: [{ name: "\${CLIENT_SECRET}" }, { name: "\${CLIENT_SECRET}" }]
  - provider: openai
    name: "\${EAST_API_KEY}"
    baseURL: https://west.example/openai/v1
    apiKey: k
    models: [{ name: "\${AUTH_TOKEN}" }, { name: "\${AUTH_TOKEN}" }, { name: "\${DB_PASSWORD}" }, { name: "\${DB_PASSWORD}" }]
`;
    const error = problemsOf(() => parseSwitchboardConfig(text, { source: 's.yaml', env }));
    expect(error.problems.length).toBeGreaterThanOrEqual(3);
    expect(error.message).not.toMatch(/secret/);
    expect(error.message).toContain("'***' duplicates deployments[0].name");
  });

  it('clips a long value it quotes', () => {
    const long = 'm'.repeat(100_000);
    const text = JSON.stringify({
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: 'https://east.example/openai/v1',
          apiKey: 'k',
          models: [{ name: long }, { name: long }],
        },
      ],
    });
    const error = problemsOf(() =>
      parseSwitchboardConfig(text, { source: 's.json', format: 'json' }),
    );
    expect(error.message).toContain('… (100000 characters)');
    expect(error.message.length).toBeLessThan(500);
  });

  it('does not print an AZURE_OPENAI_ENDPOINT that is not a URL (it may hold the key)', () => {
    const error = problemsOf(() =>
      loadSwitchboardConfig({
        AZURE_OPENAI_ENDPOINT: 'sk-proj-SECRETKEY',
        AZURE_OPENAI_API_KEY: 'k',
      }),
    );
    expect(error.message).toMatch(/AZURE_OPENAI_ENDPOINT must be an http\(s\) URL/);
    expect(error.message).not.toContain('SECRETKEY');
  });
});

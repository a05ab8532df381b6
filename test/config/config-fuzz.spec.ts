import { createSwitchboard, SwitchboardError } from 'nestjs-switchboard';
import { validateOptions } from 'nestjs-switchboard/extend';
import { seeded } from '../support/random';

/**
 * Configuration fuzz: valid configurations are generated from a seed, then broken by one or two
 * mutations, each of which knows the field path the error must name. Every broken configuration
 * must be rejected by `createSwitchboard` with a `SwitchboardError` naming each broken path.
 * Deterministic: a failing case reproduces from its index.
 */

type Config = Record<string, any>;
type Rnd = () => number;

const SEED = 0x5eed;
const CASES = 240;

const pick = <T>(rnd: Rnd, items: readonly T[]): T => items[Math.floor(rnd() * items.length)]!;
const int = (rnd: Rnd, n: number) => Math.floor(rnd() * n);

const OPENAI_MODELS = ['gpt-4o-mini', 'gpt-4o', 'gpt-4.1'];
const CLAUDE_MODELS = ['claude-sonnet-5', 'claude-haiku-4-5'];

/** A valid configuration of 1-4 deployments of both providers. */
function validConfig(rnd: Rnd): Config {
  const n = 1 + int(rnd, 4);
  const deployments = Array.from({ length: n }, (_, i) => {
    const openai = rnd() < 0.6;
    const pool = openai ? OPENAI_MODELS : CLAUDE_MODELS;
    const models = pool
      .filter((_m, k) => k === 0 || rnd() < 0.5)
      .map((name) => ({
        name,
        ...(rnd() < 0.7 ? { tpm: pick(rnd, [0, 1_000, 30_000, 450_000]) } : {}),
        ...(rnd() < 0.7 ? { rpm: pick(rnd, [0, 6, 300]) } : {}),
        ...(rnd() < 0.3 ? { cooldown: pick(rnd, [0, 1_500, 60_000]) } : {}),
      }));
    const common = {
      name: `deployment-${i}`,
      ...(rnd() < 0.5 ? { apiKey: rnd() < 0.8 ? `key-${i}` : () => Promise.resolve('t') } : {}),
      ...(rnd() < 0.3 ? { timeout: pick(rnd, [1, 5_000, 120_000]) } : {}),
      models,
    };
    if (openai) {
      return {
        provider: 'openai',
        ...common,
        apiKey: common.apiKey ?? `key-${i}`,
        ...(rnd() < 0.7 ? { baseURL: `https://r${i}.openai.azure.com/openai/v1/` } : {}),
      };
    }
    return {
      provider: 'anthropic',
      ...common,
      apiKey: common.apiKey ?? `key-${i}`,
      ...(rnd() < 0.5
        ? { resource: `res-${i}` }
        : { baseURL: `http://127.0.0.1:${1_024 + i}/anthropic/` }),
    };
  });
  return {
    deployments,
    ...(rnd() < 0.3 ? { failover: { attempts: 1 + int(rnd, 4), delay: pick(rnd, [0, 50]) } } : {}),
    ...(rnd() < 0.3 ? { ratelimitWindow: pick(rnd, [0, 60_000]) } : {}),
    ...(rnd() < 0.3 ? { maxSessions: pick(rnd, [1, 1024]) } : {}),
  };
}

/** What a mutation broke: the path the error must name, and more text it must contain. */
interface Broken {
  path: string;
  also?: string;
  what: string;
}

interface Mutation {
  name: string;
  /** Only alone: it hides other problems (or another mutation could hide it). */
  solo?: boolean;
  /** Which deployment it touches, if one (two mutations never share one). */
  apply(config: Config, rnd: Rnd, i: number): Broken | undefined;
}

const WRONG_TYPES = [null, true, {}, [], 'text', 42] as const;
const show = (v: unknown) =>
  v === undefined
    ? 'missing'
    : typeof v === 'function'
      ? 'a function'
      : (JSON.stringify(v) ?? String(v));

const at = (c: Config, i: number) => c.deployments[i] as Config;
const modelIndex = (c: Config, i: number, rnd: Rnd) => int(rnd, at(c, i).models.length);

function setField(
  target: Config,
  key: string,
  value: unknown,
  path: string,
  label: string,
): Broken {
  if (value === undefined) delete target[key];
  else target[key] = value;
  return { path, what: `${label} = ${show(value)}` };
}

const MUTATIONS: Mutation[] = [
  {
    name: 'deployment name of a wrong type or empty',
    apply: (c, rnd, i) =>
      setField(
        at(c, i),
        'name',
        pick(rnd, [...WRONG_TYPES.filter((v) => v !== 'text'), '', '  ', undefined]),
        `deployments[${i}].name`,
        'name',
      ),
  },
  {
    name: 'model name of a wrong type or empty',
    apply: (c, rnd, i) => {
      const j = modelIndex(c, i, rnd);
      return setField(
        at(c, i).models[j],
        'name',
        pick(rnd, [7, null, '', ' ', undefined, ['gpt-4o']]),
        `deployments[${i}].models[${j}].name`,
        'model name',
      );
    },
  },
  {
    name: 'quota negative, fractional, infinite or of a wrong type',
    apply: (c, rnd, i) => {
      const j = modelIndex(c, i, rnd);
      const field = pick(rnd, ['tpm', 'rpm']);
      const value = pick(rnd, [
        -1,
        -30_000,
        0.5,
        1_000.25,
        NaN,
        Infinity,
        -Infinity,
        '30000',
        null,
        true,
        {},
      ]);
      return setField(
        at(c, i).models[j],
        field,
        value,
        `deployments[${i}].models[${j}].${field}`,
        field,
      );
    },
  },
  {
    name: 'cooldown negative, fractional or of a wrong type',
    apply: (c, rnd, i) => {
      const j = modelIndex(c, i, rnd);
      const value = pick(rnd, [-1, 0.5, '10s', NaN, null, Infinity]);
      return setField(
        at(c, i).models[j],
        'cooldown',
        value,
        `deployments[${i}].models[${j}].cooldown`,
        'cooldown',
      );
    },
  },
  {
    name: 'timeout zero, negative, fractional or of a wrong type',
    apply: (c, rnd, i) =>
      setField(
        at(c, i),
        'timeout',
        pick(rnd, [0, -5, 1.5, '30s', null, NaN]),
        `deployments[${i}].timeout`,
        'timeout',
      ),
  },
  {
    name: 'unknown provider',
    apply: (c, rnd, i) =>
      setField(
        at(c, i),
        'provider',
        pick(rnd, ['azure', 'OpenAI', 'claude', 'foundry', '', 7, null, undefined]),
        `deployments[${i}].provider`,
        'provider',
      ),
  },
  {
    name: 'bad URL',
    apply: (c, rnd, i) => {
      const url = pick(rnd, [
        'not a url',
        'ftp://example.com/v1/',
        'localhost:8080',
        '',
        42,
        'http//x.com',
        '//x.com/v1/',
        'file:///etc/passwd',
        'javascript:alert(1)',
        'https://',
        'wss://x.com/',
      ]);
      return setField(at(c, i), 'baseURL', url, `deployments[${i}].baseURL`, 'baseURL');
    },
  },
  {
    name: 'bad Foundry resource',
    apply: (c, rnd, i) => {
      if (at(c, i).provider !== 'anthropic') return undefined;
      delete at(c, i).baseURL;
      return setField(
        at(c, i),
        'resource',
        pick(rnd, ['my resource', 'https://x.services.ai.azure.com', '-lead', '', 12, 'a/b']),
        `deployments[${i}].resource`,
        'resource',
      );
    },
  },
  {
    name: 'Foundry deployment without resource or baseURL',
    apply: (c, _rnd, i) => {
      if (at(c, i).provider !== 'anthropic') return undefined;
      delete at(c, i).resource;
      delete at(c, i).baseURL;
      return { path: `deployments[${i}]`, also: 'resource', what: 'no resource, no baseURL' };
    },
  },
  {
    name: 'apiKey of a wrong type or empty',
    apply: (c, rnd, i) => ({
      ...setField(
        at(c, i),
        'apiKey',
        pick(rnd, ['', 42, {}, null, ['k']]),
        `deployments[${i}].apiKey`,
        'apiKey',
      ),
      also: 'non-empty string or a function',
    }),
  },
  {
    name: 'unknown key on a deployment',
    apply: (c, rnd, i) => {
      const key = pick(rnd, ['baseUrl', 'api_key', 'model', 'deployment', 'maxRetries', 'region']);
      at(c, i)[key] = 'x';
      return { path: `deployments[${i}]`, also: `'${key}'`, what: `unknown key ${key}` };
    },
  },
  {
    name: 'unknown key on a model',
    apply: (c, rnd, i) => {
      const j = modelIndex(c, i, rnd);
      const key = pick(rnd, ['tokensPerMinute', 'TPM', 'limit', 'cooldownMs']);
      at(c, i).models[j][key] = 1;
      return {
        path: `deployments[${i}].models[${j}]`,
        also: `'${key}'`,
        what: `unknown key ${key}`,
      };
    },
  },
  {
    name: 'models missing, of a wrong type or empty',
    apply: (c, rnd, i) => {
      const value = pick(rnd, [[], 'gpt-4o', {}, null, undefined, [null], ['gpt-4o']]);
      // A list with a bad element is reported at the element.
      const path = `deployments[${i}].models${Array.isArray(value) && value.length ? '[0]' : ''}`;
      return setField(at(c, i), 'models', value, path, 'models');
    },
  },
  {
    name: 'duplicate deployment name',
    solo: true,
    apply: (c, rnd) => {
      const deployments = c.deployments as Config[];
      if (deployments.length < 2)
        deployments.push({ ...deployments[0]!, models: [...deployments[0]!.models] });
      const k = 1 + int(rnd, deployments.length - 1);
      const first = int(rnd, k);
      deployments[k]!.name = deployments[first]!.name;
      return {
        path: `deployments[${k}].name`,
        also: `deployments[${first}].name`,
        what: 'duplicate name',
      };
    },
  },
  {
    name: 'model listed twice in one deployment',
    solo: true,
    apply: (c, _rnd, i) => {
      const models = at(c, i).models as Config[];
      models.push({ name: models[0]!.name });
      return { path: `deployments[${i}].models[${models.length - 1}].name`, what: 'model twice' };
    },
  },
  {
    name: 'a model on both providers',
    solo: true,
    apply: (c, rnd, i) => {
      const d = at(c, i);
      const other = d.provider === 'openai' ? 'anthropic' : 'openai';
      const name = pick(rnd, d.models as Config[]).name as string;
      const k = c.deployments.length;
      c.deployments.push(
        other === 'openai'
          ? { provider: 'openai', name: 'intruder', apiKey: 'k', models: [{ name }] }
          : {
              provider: 'anthropic',
              name: 'intruder',
              resource: 'r',
              apiKey: 'k',
              models: [{ name: 'x' }, { name }],
            },
      );
      const j = other === 'openai' ? 0 : 1;
      return {
        path: `deployments[${k}].models[${j}].name`,
        also: 'provider',
        what: `${name} on both`,
      };
    },
  },
  {
    name: 'deployments missing, empty or of a wrong type',
    solo: true,
    apply: (c, rnd) => {
      const value = pick(rnd, [[], undefined, null, {}, 'east', [null], [42]]);
      const path = `deployments${Array.isArray(value) && value.length ? '[0]' : ''}`;
      return setField(c, 'deployments', value, path, 'deployments');
    },
  },
  {
    name: 'unknown top-level key',
    apply: (c, rnd) => {
      const key = pick(rnd, ['deployment', 'retries', 'timeout', 'apiKey', 'sessions']);
      c[key] = 1;
      return { path: '(options)', also: `'${key}'`, what: `unknown key ${key}` };
    },
  },
  {
    name: 'failover attempts, delay or key',
    apply: (c, rnd) => {
      const failover = (c.failover ??= {}) as Config;
      const field = pick(rnd, ['attempts', 'delay', 'retryIf', 'unknown']);
      if (field === 'attempts')
        return setField(
          failover,
          field,
          pick(rnd, [0, -1, 1.5, '2', null, NaN]),
          'failover.attempts',
          field,
        );
      if (field === 'delay')
        return setField(
          failover,
          field,
          pick(rnd, [-1, 0.5, 'fast', null, {}]),
          'failover.delay',
          field,
        );
      if (field === 'retryIf')
        return setField(failover, field, pick(rnd, [true, 'always', 1]), 'failover.retryIf', field);
      failover.backoff = 100;
      return { path: 'failover', also: "'backoff'", what: 'unknown failover key' };
    },
  },
  {
    name: 'ratelimitWindow or maxSessions out of range',
    apply: (c, rnd) => {
      if (rnd() < 0.5)
        return setField(
          c,
          'ratelimitWindow',
          pick(rnd, [-1, 1.5, '60s', null, Infinity]),
          'ratelimitWindow',
          'ratelimitWindow',
        );
      return setField(
        c,
        'maxSessions',
        pick(rnd, [0, -1, 2.5, '1024', null, Infinity]),
        'maxSessions',
        'maxSessions',
      );
    },
  },
  {
    name: 'selector, logger, clock or random of a wrong type',
    apply: (c, rnd) => {
      const field = pick(rnd, ['selector', 'logger', 'clock', 'random', 'state']);
      return setField(c, field, pick(rnd, [42, 'text', true, null]), field, field);
    },
  },
];

/** Which deployment a mutation about `path` touches (-1: top level). */
const deploymentOf = (path: string) => Number(/^deployments\[(\d+)\]/.exec(path)?.[1] ?? -1);

interface Case {
  index: number;
  title: string;
  build: () => { valid: Config; broken: Config; problems: Broken[] };
}

/** The `index`-th generated case: a valid base and its broken copy, both from the same seed. */
function generate(index: number): Case {
  const make = () => {
    const rnd = seeded(SEED + index);
    const valid = validConfig(rnd);
    const broken = validConfig(seeded(SEED + index));
    const problems: Broken[] = [];
    const wanted = rnd() < 0.3 ? 2 : 1;
    const used = new Set<number>();
    for (let tries = 0; problems.length < wanted && tries < 50; tries++) {
      const mutation = MUTATIONS[(index + tries * 7) % MUTATIONS.length]!;
      if (problems.length > 0 && mutation.solo) continue;
      const i = int(rnd, broken.deployments.length);
      if (used.has(i)) continue;
      const result = mutation.apply(broken, rnd, i);
      if (!result) continue;
      const touched = deploymentOf(result.path);
      used.add(touched === -1 ? -1 - tries : touched).add(i);
      problems.push(result);
      if (mutation.solo) break;
    }
    return { valid, broken, problems };
  };
  const { problems } = make();
  return {
    index,
    title: `#${index}: ${problems.map((p) => `${p.path} (${p.what})`).join(' + ')}`,
    build: make,
  };
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** The message names `path` itself, not a longer path that starts with it. */
const namesPath = (message: string, path: string) =>
  new RegExp(`${escape(path)}(?![\\[.\\w])`).test(message);

describe('configuration fuzz: invalid configurations are rejected, naming the field', () => {
  const cases = Array.from({ length: CASES }, (_, i) => generate(i));

  it('generates enough distinct cases, from every kind of mutation', () => {
    expect(new Set(cases.map((c) => c.title)).size).toBeGreaterThanOrEqual(200);
    const kinds = new Set(
      cases.flatMap((c) => c.build().problems.map((p) => p.path.replace(/\d+/g, 'N'))),
    );
    expect(kinds.size).toBeGreaterThanOrEqual(MUTATIONS.length);
  });

  it.each(cases)('$title', ({ build }) => {
    const { valid, broken, problems } = build();
    expect(problems.length).toBeGreaterThan(0);
    expect(() => validateOptions(valid)).not.toThrow(); // the mutation is what breaks it

    let thrown: unknown;
    try {
      const sb = createSwitchboard(broken as never);
      void sb.close();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(SwitchboardError);
    const text = (thrown as Error).message;
    for (const p of problems) {
      expect({ path: p.path, named: namesPath(text, p.path), text }).toMatchObject({ named: true });
      if (p.also) expect(text).toContain(p.also);
    }
  });

  it.each([null, undefined, 42, 'deployments', [], () => ({})])(
    'options that are not an object (%p) are rejected too',
    (options) => {
      expect(() => createSwitchboard(options as never)).toThrow(SwitchboardError);
    },
  );
});

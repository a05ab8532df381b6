import { inspect } from 'node:util';
import type { AccessToken, GetTokenOptions, TokenCredential } from '@azure/identity';
import { getBearerTokenProvider } from '@azure/identity';
import {
  createSwitchboard,
  SwitchboardHealthIndicator,
  type DeploymentConfig,
  type Switchboard,
  type SwitchboardLogger,
} from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';

const GPT = 'gpt-4o';
const CLAUDE = 'claude-sonnet-5';
const OPENAI_SCOPE = 'https://cognitiveservices.azure.com/.default';

/**
 * A TokenCredential as `DefaultAzureCredential` is one: `getToken(scopes)` resolves an access
 * token with its expiry. Each call hands out the next token; no network.
 */
class CountingCredential implements TokenCredential {
  readonly scopes: string[][] = [];
  private issued = 0;

  constructor(private readonly lifetimeMs: (n: number) => number) {}

  async getToken(scopes: string | string[], _options?: GetTokenOptions): Promise<AccessToken> {
    this.scopes.push(([] as string[]).concat(scopes));
    const n = ++this.issued;
    await Promise.resolve();
    return { token: `entra-token-${n}`, expiresOnTimestamp: Date.now() + this.lifetimeMs(n) };
  }

  get calls(): number {
    return this.issued;
  }
}

describe('Microsoft Entra ID through @azure/identity getBearerTokenProvider', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard | undefined;
  const lines: string[] = [];
  const logger: SwitchboardLogger = {
    log: (m: unknown) => void lines.push(String(m)),
    warn: (m: unknown) => void lines.push(String(m)),
    error: (m: unknown) => void lines.push(String(m)),
    debug: (m: unknown) => void lines.push(String(m)),
    verbose: (m: unknown) => void lines.push(String(m)),
  };

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'east' }, { name: 'foundry' }],
    });
  });
  afterAll(() => upstream.close());
  afterEach(async () => {
    await sb?.close();
    sb = undefined;
    upstream.reset();
    lines.length = 0;
  });

  const build = (openaiKey: DeploymentConfig['apiKey'], claudeKey: DeploymentConfig['apiKey']) => {
    sb = createSwitchboard({
      ratelimitWindow: 0,
      logger,
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: upstream.deployment('east').openaiBaseURL,
          apiKey: openaiKey,
          models: [{ name: GPT, deployment: 'gpt4o-east' }],
        },
        {
          provider: 'anthropic',
          name: 'foundry',
          baseURL: upstream.deployment('foundry').anthropicBaseURL,
          apiKey: claudeKey,
          models: [{ name: CLAUDE, deployment: 'claude-east' }],
        },
      ],
    });
    return sb;
  };
  const chat = () =>
    sb!.chat.completions.create({ model: GPT, messages: [{ role: 'user', content: 'hi' }] });
  const claude = () =>
    sb!.messages.create({
      model: CLAUDE,
      max_tokens: 8,
      messages: [{ role: 'user', content: 'hi' }],
    });
  const headers = (name: string) => upstream.deployment(name).requests.map((r) => r.headers);

  it('both providers send the token as Authorization: Bearer, for the scope asked', async () => {
    const openaiCredential = new CountingCredential(() => 3_600_000);
    const claudeCredential = new CountingCredential(() => 3_600_000);
    build(
      getBearerTokenProvider(openaiCredential, OPENAI_SCOPE),
      getBearerTokenProvider(claudeCredential, 'https://ai.azure.com/.default'),
    );
    await chat();
    await claude();
    const [east] = headers('east');
    expect(east!.authorization).toBe('Bearer entra-token-1');
    expect(east!['api-key']).toBeUndefined();
    const [foundry] = headers('foundry');
    expect(foundry!.authorization).toBe('Bearer entra-token-1');
    expect(foundry!['x-api-key']).toBeUndefined();
    expect(openaiCredential.scopes).toEqual([[OPENAI_SCOPE]]);
    expect(claudeCredential.scopes).toEqual([['https://ai.azure.com/.default']]);
  });

  it('an expired token is fetched again; a fresh one is reused', async () => {
    // The first token is already past its expiry when it is next needed.
    const credential = new CountingCredential((n) => (n === 1 ? -1 : 3_600_000));
    const provider = getBearerTokenProvider(credential, OPENAI_SCOPE);
    build(provider, provider);
    await chat();
    await chat();
    await chat();
    expect(headers('east').map((h) => h.authorization)).toEqual([
      'Bearer entra-token-1',
      'Bearer entra-token-2',
      'Bearer entra-token-2',
    ]);
    expect(credential.calls).toBe(2);
  });

  it('one token fetch for many concurrent calls', async () => {
    const credential = new CountingCredential(() => 3_600_000);
    build(getBearerTokenProvider(credential, OPENAI_SCOPE), 'k');
    const answers = await Promise.all(Array.from({ length: 25 }, () => chat()));
    expect(answers).toHaveLength(25);
    expect(credential.calls).toBe(1);
    expect(new Set(headers('east').map((h) => h.authorization))).toEqual(
      new Set(['Bearer entra-token-1']),
    );
  });

  it('the token is never logged, printed or reported, even when the upstream refuses it', async () => {
    const credential = new CountingCredential(() => 3_600_000);
    build(
      getBearerTokenProvider(credential, OPENAI_SCOPE),
      getBearerTokenProvider(credential, OPENAI_SCOPE),
    );
    upstream.deployment('east').fail({ kind: 'status', status: 401 }, Infinity);
    upstream.deployment('foundry').fail({ kind: 'status', status: 403 }, Infinity);
    const errors = await Promise.all([
      chat().then(
        () => undefined,
        (e: unknown) => e,
      ),
      claude().then(
        () => undefined,
        (e: unknown) => e,
      ),
    ]);
    expect(errors.every((e) => e instanceof Error)).toBe(true);
    const everything = [
      ...lines,
      ...errors.map((e) => inspect(e, { depth: 6 })),
      JSON.stringify(sb!.stats()),
      JSON.stringify(new SwitchboardHealthIndicator(sb!).isHealthy()),
      inspect(sb!.deployments, { depth: 6 }),
      JSON.stringify([...sb!.deployments.values()]),
    ].join('\n');
    expect(lines.some((l) => /marked down/.test(l))).toBe(true);
    expect(everything).toMatch(/unauthorized \(401\)/);
    expect(everything).not.toMatch(/entra-token/);
  });
});

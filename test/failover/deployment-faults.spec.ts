import {
  createSwitchboard,
  SwitchboardHealthIndicator,
  TokenProviderError,
  type DeploymentConfig,
  type Switchboard,
} from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';

const GPT = 'gpt-4o';
const CLAUDE = 'claude-sonnet-5';
const NAMES = ['d0', 'd1', 'd2'];
const ask = { model: GPT, messages: [{ role: 'user' as const, content: 'hello' }] };

describe('faults that belong to one deployment', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard | undefined;

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [...NAMES.map((name) => ({ name })), { name: 'c0' }, { name: 'c1' }],
    });
  });
  afterAll(() => upstream.close());
  afterEach(async () => {
    await sb?.close();
    sb = undefined;
    upstream.reset();
  });

  const openai = (name: string, extra: Partial<DeploymentConfig> = {}): DeploymentConfig =>
    ({
      provider: 'openai',
      name,
      baseURL: upstream.deployment(name).openaiBaseURL,
      apiKey: `sk-${name}`,
      models: [{ name: GPT, deployment: `gpt4o-${name}` }],
      ...extra,
    }) as DeploymentConfig;
  const build = (deployments: DeploymentConfig[]) => {
    sb = createSwitchboard({ deployments, ratelimitWindow: 0 });
    return sb;
  };
  const state = (name: string, model = GPT) => sb!.deployments.get(name)!.models.get(model)!;
  const health = () => new SwitchboardHealthIndicator(sb!).isHealthy('llm').llm;

  it.each([401, 403])(
    'a %i on one of three deployments: 30 of 30 calls succeed, the bad one gets at most a few',
    async (status) => {
      build(NAMES.map((n) => openai(n)));
      upstream.deployment('d1').fail({ kind: 'status', status }, Infinity);
      let ok = 0;
      for (let i = 0; i < 30; i++) {
        const c = await sb!.chat.completions.create(ask);
        if (c.choices.length === 1) ok++;
      }
      expect(ok).toBe(30);
      expect(upstream.deployment('d1').stats.requests).toBeGreaterThanOrEqual(1);
      expect(upstream.deployment('d1').stats.requests).toBeLessThanOrEqual(3);
      expect(state('d1').isCooling()).toBe(true);
      expect(state('d1').downReason).toBe(`unauthorized (${status})`);
      expect(sb!.stats().d1![GPT]!.cooling).toBe(`unauthorized (${status})`);
      const h = health();
      expect(h.status).toBe('up');
      expect(h.models[GPT]).toMatchObject({ healthy: 2, total: 3 });
      expect(h.reasons).toEqual({ [GPT]: { d1: `unauthorized (${status})` } });
    },
  );

  it('every deployment unauthorized: health is down and says why', async () => {
    build([openai('d0'), openai('d1')]);
    upstream.deployment('d0').fail({ kind: 'status', status: 401 }, Infinity);
    upstream.deployment('d1').fail({ kind: 'status', status: 403 }, Infinity);
    await expect(sb!.chat.completions.create(ask)).rejects.toMatchObject({
      status: expect.any(Number),
    });
    const h = health();
    expect(h.status).toBe('down');
    expect(h.message).toBe('no healthy deployment for gpt-4o');
    expect(h.reasons).toEqual({ [GPT]: { d0: 'unauthorized (401)', d1: 'unauthorized (403)' } });
  });

  it('a 400 stays the caller’s: no mark-down, no failover', async () => {
    build(NAMES.map((n) => openai(n)));
    for (const d of NAMES) upstream.deployment(d).fail({ kind: 'status', status: 400 });
    await expect(sb!.chat.completions.create(ask)).rejects.toMatchObject({ status: 400 });
    const sent = NAMES.map((n) => upstream.deployment(n).stats.requests);
    expect(sent.reduce((a, b) => a + b, 0)).toBe(1);
    for (const n of NAMES) {
      expect(state(n).isCooling()).toBe(false);
      expect(sb!.stats()[n]![GPT]!.cooling).toBeUndefined();
    }
    expect(health().models[GPT]).toEqual({ healthy: 3, total: 3 });
    expect(health().reasons).toBeUndefined();
  });

  it("Azure's 404 DeploymentNotFound marks the model down there as not deployed, and fails over", async () => {
    build(NAMES.map((n) => openai(n)));
    // d2's resource knows no deployment of the configured name.
    upstream.deployment('d2').deploymentNames = ['some-other-name'];
    try {
      for (let i = 0; i < 12; i++) await sb!.chat.completions.create(ask);
      expect(upstream.deployment('d2').stats.byStatus[404]).toBe(1);
      expect(upstream.deployment('d2').stats.ok).toBe(0);
      expect(state('d2').downReason).toBe('not deployed');
      expect(health().reasons).toEqual({ [GPT]: { d2: 'not deployed' } });
    } finally {
      upstream.deployment('d2').deploymentNames = undefined;
    }
  });

  it("a 404 without DeploymentNotFound (an unknown stored response) stays the caller's", async () => {
    build([openai('d0')]);
    upstream.deployment('d0').fail({ kind: 'status', status: 404 });
    await expect(sb!.chat.completions.create(ask)).rejects.toMatchObject({ status: 404 });
    expect(state('d0').isCooling()).toBe(false);
  });

  it('a token provider that throws is a 401 of that deployment: the call fails over', async () => {
    let asked = 0;
    build([
      openai('d0', {
        apiKey: () => {
          asked++;
          return Promise.reject(new Error('ManagedIdentityCredential: no identity endpoint'));
        },
      }),
      openai('d1'),
    ]);
    for (let i = 0; i < 10; i++) await sb!.chat.completions.create(ask);
    expect(asked).toBe(1);
    expect(upstream.deployment('d0').stats.requests).toBe(0);
    expect(upstream.deployment('d1').stats.ok).toBe(10);
    expect(state('d0').downReason).toBe('unauthorized (the token provider failed)');
  });

  it("the caller sees the provider's error in the message, on both SDKs", async () => {
    build([
      openai('d0', { apiKey: () => Promise.reject(new Error('AADSTS700016: app not found')) }),
      {
        provider: 'anthropic',
        name: 'c0',
        baseURL: upstream.deployment('c0').anthropicBaseURL,
        apiKey: () => Promise.resolve(''),
        models: [{ name: CLAUDE, deployment: 'claude-east' }],
      },
    ]);
    const error = (await sb!.chat.completions.create(ask).then(
      () => undefined,
      (e: unknown) => e,
    )) as Error;
    expect(error.message).toMatch(
      /deployment 'd0': the token provider failed: AADSTS700016: app not found/,
    );
    expect(error.cause).toBeInstanceOf(TokenProviderError);
    const claude = (await sb!.messages
      .create({ model: CLAUDE, max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      )) as Error;
    expect(claude.message).toMatch(
      /deployment 'c0': the token provider returned an empty string, not a token/,
    );
    expect(state('c0', CLAUDE).downReason).toBe('unauthorized (the token provider failed)');
    expect(upstream.deployment('c0').stats.requests).toBe(0);
  });

  it('401 on a Claude deployment fails over to the other', async () => {
    build(
      ['c0', 'c1'].map((name): DeploymentConfig => ({
        provider: 'anthropic',
        name,
        baseURL: upstream.deployment(name).anthropicBaseURL,
        apiKey: 'k',
        models: [{ name: CLAUDE }],
      })),
    );
    upstream.deployment('c0').fail({ kind: 'status', status: 401 }, Infinity);
    for (let i = 0; i < 10; i++) {
      await sb!.messages.create({
        model: CLAUDE,
        max_tokens: 4,
        messages: [{ role: 'user', content: 'hi' }],
      });
    }
    expect(upstream.deployment('c0').stats.requests).toBeLessThanOrEqual(2);
    expect(upstream.deployment('c1').stats.ok).toBe(10);
  });
});

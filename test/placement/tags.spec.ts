import { metrics } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import OpenAI, { RateLimitError } from 'openai';
import {
  createSwitchboard,
  SwitchboardError,
  type Switchboard,
  type SwitchboardOptions,
} from 'nestjs-switchboard';
import { METER_NAME } from 'nestjs-switchboard/extend';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { FakeClock, seeded } from '../support/random';
import { TestReader } from '../support/metric-reader';
import '../support/quiet-logs';

const MODEL = 'gpt-4o';
const MINI = 'gpt-4o-mini';
const REGIONS = ['eu-west', 'eu-north', 'us-east'] as const;
/** Each deployment's tpm: a call reserving 9 000 output tokens fills one. */
const TPM = 10_000;

describe('tags: where a call may go', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard;
  let clock: FakeClock;
  let reader: TestReader;
  let provider: MeterProvider;

  beforeEach(async () => {
    reader = new TestReader();
    provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
    clock = new FakeClock();
    upstream = await SimulatedUpstream.start({
      deployments: REGIONS.map((name) => ({ name })),
      clock: clock.now,
    });
    sb = build();
  });
  afterEach(async () => {
    await sb.close();
    await upstream.close();
    await provider.shutdown();
    metrics.disable();
  });

  /** The switchboard over the three regions, with `extra` options. */
  const build = (extra: Partial<SwitchboardOptions> = {}) =>
    createSwitchboard({
      deployments: REGIONS.map((name) => ({
        provider: 'openai' as const,
        name,
        baseURL: upstream.deployment(name).openaiBaseURL,
        apiKey: 'k',
        tags: name.startsWith('eu') ? ['eu', 'gdpr'] : ['us'],
        // The smaller model is served in the US only.
        models:
          name === 'us-east'
            ? [{ name: MODEL, tpm: TPM }, { name: MINI }]
            : [{ name: MODEL, tpm: TPM }],
      })),
      fallbacks: { [MODEL]: [MINI] },
      clock: clock.now,
      random: seeded(7),
      ...extra,
    });

  const ask = (extra: object = {}) =>
    sb.chat.completions.create({
      model: MODEL,
      max_tokens: 8,
      messages: [{ role: 'user', content: 'hello' }],
      ...extra,
    });
  const sent = (name: string) => upstream.deployment(name).stats.requests;
  /** Fills a deployment's tpm by its own count: one call reserving most of it. */
  const fill = (name: string) => {
    const d = sb.deployments.get(name)!.models.get(MODEL)!;
    d.admit({ input: 10, output: TPM - 15 });
    expect(d.hasRoom({ input: 20, output: 8 })).toBe(false);
  };

  it('keeps calls with tags on the deployments carrying them; untagged calls go everywhere', async () => {
    for (let i = 0; i < 60; i++) await ask({ tags: ['eu'] });
    expect(sent('us-east')).toBe(0);
    expect(sent('eu-west') + sent('eu-north')).toBe(60);
    expect(sent('eu-west')).toBeGreaterThan(0);
    expect(sent('eu-north')).toBeGreaterThan(0);

    for (let i = 0; i < 60; i++) await ask();
    for (const name of REGIONS) expect(sent(name)).toBeGreaterThan(0);
    // Every tag must be carried: eu and gdpr are both on the EU deployments, us on neither.
    const before = sent('us-east');
    for (let i = 0; i < 10; i++) await ask({ tags: ['gdpr', 'eu'] });
    expect(sent('us-east')).toBe(before);
  });

  it('answers 429 when the tagged deployments are full, never spilling to others or to a fallback there', async () => {
    fill('eu-west');
    fill('eu-north');
    const error = await ask({ tags: ['eu'] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(sent('us-east')).toBe(0);
    expect(sent('eu-west') + sent('eu-north')).toBe(0);
    // The message names every deployment and why it was passed over.
    const message = (error as Error).message;
    expect(message).toMatch(/eu-west: quota full, ready in \d+ ms/);
    expect(message).toMatch(/eu-north: quota full/);
    expect(message).toMatch(/us-east: lacks tag eu/);
    expect(message).toMatch(/us-east \(gpt-4o-mini\): lacks tag eu/);
    const explanations = (error as { explanations: { deployment: string; reason: string }[] })
      .explanations;
    expect(explanations.map((e) => `${e.deployment}:${e.reason}`)).toEqual([
      'eu-west:no_room',
      'eu-north:no_room',
      'us-east:tags',
      'us-east:tags',
    ]);
    // Without tags the same call falls over to the US deployment.
    await ask();
    expect(sent('us-east')).toBe(1);
    const { resourceMetrics } = await reader.collect();
    const refused = resourceMetrics.scopeMetrics
      .filter((s) => s.scope.name === METER_NAME)
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === 'switchboard.tag_refusals')!
      .dataPoints.map((p) => [p.attributes, p.value]);
    expect(refused).toEqual([
      [{ model: MODEL }, 1],
      [{ model: MINI }, 0],
    ]);
  });

  it('says so when no deployment of the model or its fallbacks carries the tags', async () => {
    const error = await ask({ tags: ['apac'] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SwitchboardError);
    expect((error as SwitchboardError).status).toBe(404);
    expect((error as Error).message).toContain('carries the tags apac');
    expect((error as SwitchboardError).explanations.map((e) => e.reason)).toEqual([
      'tags',
      'tags',
      'tags',
      'tags',
    ]);
    await expect(ask({ tags: 'eu' })).rejects.toThrow(TypeError);
    await expect(ask({ tags: ['e u'] })).rejects.toThrow(/without blanks or commas/);
    for (const name of REGIONS) expect(sent(name)).toBe(0);
  });

  it('goes to a fallback that carries the tags when the model has none there', async () => {
    const answer = await ask({ tags: ['us'], model: MODEL });
    expect(answer.model).toBe(MODEL);
    expect(sent('us-east')).toBe(1);
    fill('us-east');
    const fallback = await ask({ tags: ['us'] });
    expect(fallback.model).toBe(MINI);
    expect(sent('eu-west') + sent('eu-north')).toBe(0);
  });

  it('does the same through sb.fetch with x-switchboard-tags, explanations in the error body', async () => {
    const client = new OpenAI({
      apiKey: 'unused',
      baseURL: 'http://switchboard/v1',
      fetch: sb.fetch,
      maxRetries: 0,
    });
    const headers = { 'x-switchboard-tags': 'eu' };
    for (let i = 0; i < 60; i++) {
      await client.chat.completions.create(
        { model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
        { headers },
      );
    }
    expect(sent('us-east')).toBe(0);
    expect(sent('eu-west') + sent('eu-north')).toBe(60);
    fill('eu-west');
    fill('eu-north');
    const res = await sb.fetch('http://switchboard/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({
        model: MODEL,
        max_tokens: 8,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    expect(res.status).toBe(429);
    const body = (await res.json()) as {
      error: { message: string; explanations: { deployment: string; reason: string }[] };
    };
    expect(body.error.message).toContain('us-east: lacks tag eu');
    expect(body.error.explanations.map((e) => e.reason)).toEqual([
      'no_room',
      'no_room',
      'tags',
      'tags',
    ]);
    expect(JSON.stringify(body)).not.toContain('127.0.0.1');
    expect(sent('us-east')).toBe(0);
  });

  describe("a tenant's tags", () => {
    beforeEach(async () => {
      await sb.close();
      sb = build({
        tenants: {
          // Tags alone, tags with limits (its calls are admitted first), limits alone.
          acme: { tags: ['eu'] },
          globex: { rpm: 1_000, tags: ['eu'] },
          initech: { rpm: 1_000 },
          // Every tenant not named.
          '*': { tags: ['eu'] },
        },
      });
    });

    it('keep all of its calls on the deployments carrying them, for named tenants and through *', async () => {
      for (let i = 0; i < 60; i++) await ask({ tenant: 'acme' });
      for (let i = 0; i < 20; i++) await ask({ tenant: 'globex' });
      for (let i = 0; i < 20; i++) await ask({ tenant: `unnamed-${i % 4}` });
      expect(sent('us-east')).toBe(0);
      expect(sent('eu-west') + sent('eu-north')).toBe(100);
      expect(sent('eu-west')).toBeGreaterThan(0);
      expect(sent('eu-north')).toBeGreaterThan(0);
      // A tenant without tags, and a call naming no tenant, go everywhere.
      for (let i = 0; i < 30; i++) await ask({ tenant: 'initech' });
      const afterInitech = sent('us-east');
      expect(afterInitech).toBeGreaterThan(0);
      for (let i = 0; i < 30; i++) await ask();
      expect(sent('us-east')).toBeGreaterThan(afterInitech);
    });

    it('add to the call’s own tags, and bind its fallbacks: no room there is a 429, never a spill', async () => {
      // eu from the tenant and us from the call: no deployment carries both.
      const both = await ask({ tenant: 'acme', tags: ['us'] }).catch((e: unknown) => e);
      expect(both).toBeInstanceOf(SwitchboardError);
      expect((both as SwitchboardError).status).toBe(404);
      expect((both as Error).message).toContain('carries the tags eu,us');
      fill('eu-west');
      fill('eu-north');
      for (const tenant of ['acme', 'globex', 'someone']) {
        const error = await ask({ tenant }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(RateLimitError);
        expect((error as Error).message).toMatch(/us-east: lacks tag eu/);
        expect((error as Error).message).toMatch(/us-east \(gpt-4o-mini\): lacks tag eu/);
      }
      expect(sent('us-east') + sent('eu-west') + sent('eu-north')).toBe(0);
      // The same call of a tenant without tags falls over to the US deployment.
      await ask({ tenant: 'initech' });
      expect(sent('us-east')).toBe(1);
    });

    it('must be carried together by some deployment, or the options are refused', () => {
      expect(() => build({ tenants: { acme: { tags: ['eu', 'us'] } } })).toThrow(
        /tenants\.acme\.tags names eu, us, but no deployment carries them all/,
      );
      expect(() => build({ tenants: { '*': { tags: ['apac'] } } })).toThrow(
        /tenants\.\*\.tags names apac, but no deployment carries it/,
      );
      expect(() => build({ tenants: { acme: { tags: ['gdpr', 'eu'] } } })).not.toThrow();
    });

    it('hold through sb.fetch with x-switchboard-tenant', async () => {
      const client = new OpenAI({
        apiKey: 'unused',
        baseURL: 'http://switchboard/v1',
        fetch: sb.fetch,
        maxRetries: 0,
      });
      const call = (tenant: string) =>
        client.chat.completions.create(
          { model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
          { headers: { 'x-switchboard-tenant': tenant } },
        );
      for (let i = 0; i < 60; i++) await call(i % 2 === 0 ? 'acme' : 'someone-else');
      expect(sent('us-east')).toBe(0);
      expect(sent('eu-west') + sent('eu-north')).toBe(60);
      for (let i = 0; i < 30; i++) await call('initech');
      expect(sent('us-east')).toBeGreaterThan(0);
    });
  });

  it('shows each deployment’s tags in stats()', () => {
    const stats = sb.stats();
    expect(stats['eu-west']![MODEL]!.tags).toEqual(['eu', 'gdpr']);
    expect(stats['us-east']![MINI]!.tags).toEqual(['us']);
  });
});

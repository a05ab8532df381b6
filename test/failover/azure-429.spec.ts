import { metrics, type Attributes } from '@opentelemetry/api';
import { MeterProvider, type DataPoint } from '@opentelemetry/sdk-metrics';
import {
  createSwitchboard,
  SwitchboardHealthIndicator,
  type DeploymentConfig,
  type Switchboard,
} from 'nestjs-switchboard';
import { METER_NAME, SWITCHBOARD_METRICS } from 'nestjs-switchboard/extend';
import { QUOTA_EXHAUSTED_AFTER_MS } from '../../src/failover/classify';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { TestReader } from '../support/metric-reader';

const GPT = 'gpt-4o';
const ask = { model: GPT, messages: [{ role: 'user' as const, content: 'hello' }] };

describe("Azure's 429s apart, and spilled answers", () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard | undefined;

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'ptu' }, { name: 'payg' }],
    });
  });
  afterAll(() => upstream.close());
  afterEach(async () => {
    await sb?.close();
    sb = undefined;
    upstream.reset();
    for (const d of upstream.deployments) d.spillover = false;
  });

  const build = () => {
    sb = createSwitchboard({
      ratelimitWindow: 0,
      deployments: ['ptu', 'payg'].map((name): DeploymentConfig => ({
        provider: 'openai',
        name,
        baseURL: upstream.deployment(name).openaiBaseURL,
        apiKey: 'k',
        models: [{ name: GPT, deployment: `gpt4o-${name}`, tpm: 1_000_000, rpm: 10_000 }],
      })),
    });
    return sb;
  };
  const state = (name: string) => sb!.deployments.get(name)!.models.get(GPT)!;

  it('a 429 that asks for hours is a quota exhausted until then: reported, and the model avoided', async () => {
    build();
    const hours = 6 * 3600;
    upstream.deployment('ptu').fail({ kind: 'status', status: 429, retryAfter: hours }, Infinity);
    const before = Date.now();
    for (let i = 0; i < 10; i++) await sb!.chat.completions.create(ask);
    const after = Date.now();
    expect(upstream.deployment('ptu').stats.requests).toBe(1);
    expect(upstream.deployment('payg').stats.ok).toBe(10);
    const why = state('ptu').downReason!;
    const m = /^quota exhausted until (\S+)$/.exec(why);
    expect(m).not.toBeNull();
    const until = Date.parse(m![1]!);
    expect(until).toBeGreaterThanOrEqual(before + hours * 1000);
    expect(until).toBeLessThanOrEqual(after + hours * 1000);
    expect(state('ptu').cooldownUntil).toBeGreaterThanOrEqual(before + hours * 1000);
    expect(sb!.stats().ptu![GPT]!.cooling).toBe(why);
    const health = new SwitchboardHealthIndicator(sb!).isHealthy('llm').llm;
    expect(health.status).toBe('up');
    expect(health.reasons).toEqual({ [GPT]: { ptu: why } });
    // Room comes back by itself: a quota wait, not a fault.
    expect(state('ptu').blockedBy({ input: 1, output: 0 })).toBe('quota');
  });

  it('the per-minute ones keep their handling: cooled for their retry-after, no quota report', async () => {
    build();
    const seconds = QUOTA_EXHAUSTED_AFTER_MS / 1000 - 1;
    upstream.deployment('ptu').fail({ kind: 'status', status: 429, retryAfter: seconds });
    for (let i = 0; i < 4; i++) await sb!.chat.completions.create(ask);
    expect(state('ptu').downReason).toBe('rate_limit');
    expect(state('ptu').cooldownRemaining).toBeLessThanOrEqual(seconds * 1000);
    expect(sb!.stats().ptu![GPT]!.cooling).toBe('rate_limit');
  });

  it('counts spilled answers (x-ms-spillover-from-<deployment>) per model and deployment', async () => {
    const reader = new TestReader();
    const provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
    try {
      build();
      upstream.deployment('ptu').spillover = true;
      for (let i = 0; i < 12; i++) await sb!.chat.completions.create(ask);
      const spilledUpstream = upstream.deployment('ptu').stats.ok;
      expect(spilledUpstream).toBeGreaterThan(0);
      const { resourceMetrics } = await reader.collect();
      const points = resourceMetrics.scopeMetrics
        .filter((s) => s.scope.name === METER_NAME)
        .flatMap((s) => s.metrics)
        .find((m) => m.descriptor.name === SWITCHBOARD_METRICS.SPILLED_ANSWERS)?.dataPoints as
        DataPoint<number>[] | undefined;
      const by = (points ?? []).map((p) => [p.attributes as Attributes, p.value] as const);
      expect(by).toEqual([[{ model: GPT, deployment: 'ptu' }, spilledUpstream]]);
    } finally {
      await sb?.close();
      sb = undefined;
      await provider.shutdown();
      metrics.disable();
    }
  });
});

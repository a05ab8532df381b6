import { metrics, type Attributes } from '@opentelemetry/api';
import { MeterProvider, MetricReader, type DataPoint } from '@opentelemetry/sdk-metrics';
import { InternalServerError } from '@anthropic-ai/sdk';
import { RateLimitError } from 'openai';
import { createSwitchboard, METER_NAME, type Switchboard } from '../../src';
import { SimulatedUpstream } from '../../src/testing';
import { FakeClock } from '../support/random';
import '../support/quiet-logs';

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-sonnet-5';

/** Collects on demand: no export interval, no timers. */
class TestReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** Every data point of the switchboard's meter, by instrument name. */
async function read(reader: MetricReader): Promise<Record<string, DataPoint<number>[]>> {
  const { resourceMetrics, errors } = await reader.collect();
  expect(errors).toEqual([]);
  const out: Record<string, DataPoint<number>[]> = {};
  for (const scope of resourceMetrics.scopeMetrics) {
    if (scope.scope.name !== METER_NAME) continue;
    for (const metric of scope.metrics) {
      out[metric.descriptor.name] = metric.dataPoints as DataPoint<number>[];
    }
  }
  return out;
}

/** `{ 'deployment=east,model=gpt-4o-mini': 2, ... }`: points keyed by sorted attributes. */
function byAttributes(points: DataPoint<number>[] | undefined): Record<string, number> {
  const key = (attributes: Attributes) =>
    Object.keys(attributes)
      .sort()
      .map((k) => `${k}=${String(attributes[k])}`)
      .join(',');
  return Object.fromEntries((points ?? []).map((p) => [key(p.attributes), p.value]));
}

describe('switchboard metrics through the application MeterProvider', () => {
  let upstream: SimulatedUpstream;
  let reader: TestReader;
  let provider: MeterProvider;
  let sb: Switchboard;
  let clock: FakeClock;

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'east' }, { name: 'west' }, { name: 'foundry' }],
    });
  });
  afterAll(() => upstream.close());

  beforeEach(() => {
    // Registered after the library was imported, as main.ts does: the switchboard must use it.
    reader = new TestReader();
    provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
    clock = new FakeClock();
    sb = createSwitchboard({
      deployments: [
        ...(['east', 'west'] as const).map((name) => ({
          provider: 'openai' as const,
          name,
          baseURL: upstream.deployment(name).openaiBaseURL,
          apiKey: 'k',
          models: [{ name: GPT, tpm: 10_000, rpm: 10 }],
        })),
        {
          provider: 'anthropic',
          name: 'foundry',
          baseURL: upstream.deployment('foundry').anthropicBaseURL,
          apiKey: 'k',
          models: [{ name: CLAUDE, rpm: 4 }],
        },
      ],
      failover: { attempts: 1 },
      ratelimitWindow: 0,
      clock: clock.now,
    });
  });

  afterEach(async () => {
    await sb.close();
    await provider.shutdown();
    metrics.disable();
    upstream.reset();
  });

  const state = (deployment: string, model = GPT) =>
    sb.deployments.get(deployment)!.models.get(model)!;
  const ask = () =>
    sb.chat.completions.create({ model: GPT, messages: [{ role: 'user', content: 'Hi' }] });
  const askClaude = () =>
    sb.messages.create({
      model: CLAUDE,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hi' }],
    });

  it('counts requests and failures with their attributes, and observes health and utilization', async () => {
    // Only east is healthy: two calls land there, the third meets a 429.
    state('west').markDown(60_000);
    await ask();
    await ask();
    upstream.deployment('east').fail({ kind: 'status', status: 429, retryAfterMs: 20_000 });
    await expect(ask()).rejects.toBeInstanceOf(RateLimitError);

    // Both deployments of the chat model are down now.
    let data = await read(reader);
    expect(byAttributes(data.requests)).toEqual({ 'deployment=east,model=gpt-4o-mini': 3 });
    expect(byAttributes(data.failures)).toEqual({
      'deployment=east,model=gpt-4o-mini,reason=rate_limit': 1,
    });
    expect(byAttributes(data.healthy_deployments_count)).toEqual({
      'model=gpt-4o-mini': 0,
      'model=claude-sonnet-5': 1,
    });
    expect(byAttributes(data.utilization)).toEqual({
      'deployment=east,model=gpt-4o-mini': 1,
      'deployment=west,model=gpt-4o-mini': 1,
      'deployment=foundry,model=claude-sonnet-5': 0,
    });

    // West comes back and takes a call; Claude answers once and then fails with a 500.
    state('west').markUp();
    await ask();
    await askClaude();
    upstream.deployment('foundry').fail({ kind: 'status', status: 500 });
    await expect(askClaude()).rejects.toBeInstanceOf(InternalServerError);

    data = await read(reader);
    expect(byAttributes(data.requests)).toEqual({
      'deployment=east,model=gpt-4o-mini': 3,
      'deployment=west,model=gpt-4o-mini': 1,
      'deployment=foundry,model=claude-sonnet-5': 2,
    });
    expect(byAttributes(data.failures)).toEqual({
      'deployment=east,model=gpt-4o-mini,reason=rate_limit': 1,
      'deployment=foundry,model=claude-sonnet-5,reason=server_error': 1,
    });
    expect(byAttributes(data.healthy_deployments_count)).toEqual({
      'model=gpt-4o-mini': 1,
      'model=claude-sonnet-5': 1,
    });
    const util = byAttributes(data.utilization);
    expect(util['deployment=east,model=gpt-4o-mini']).toBe(1);
    // One request of 10 per minute; its few tokens weigh less than that against 10 000 TPM.
    expect(util['deployment=west,model=gpt-4o-mini']).toBeCloseTo(0.1, 5);
    // Two requests of 4, the failed one included.
    expect(util['deployment=foundry,model=claude-sonnet-5']).toBeCloseTo(0.5, 5);

    // The cooldown ends on the clock: the gauges follow without any call.
    clock.advance(20_000);
    data = await read(reader);
    expect(byAttributes(data.healthy_deployments_count)['model=gpt-4o-mini']).toBe(2);
    expect(byAttributes(data.utilization)['deployment=east,model=gpt-4o-mini']).toBeCloseTo(0.3, 5);
  });

  it('counts each failover retry by the deployment that failed and the reason', async () => {
    const retrying = createSwitchboard({
      deployments: (['east', 'west'] as const).map((name) => ({
        provider: 'openai' as const,
        name,
        baseURL: upstream.deployment(name).openaiBaseURL,
        apiKey: 'k',
        models: [{ name: GPT }],
      })),
      failover: { attempts: 3 },
      ratelimitWindow: 0,
    });
    try {
      retrying.registry.sessions.set('s', 'east');
      upstream.deployment('east').fail({ kind: 'status', status: 500 });
      upstream.deployment('west').fail({ kind: 'status', status: 429, retryAfterMs: 1 });
      await retrying.chat.completions.create({
        model: GPT,
        messages: [{ role: 'user', content: 'Hi' }],
        session_id: 's',
      });
      const data = await read(reader);
      expect(byAttributes(data.retries)).toEqual({
        'deployment=east,model=gpt-4o-mini,reason=server_error': 1,
        'deployment=west,model=gpt-4o-mini,reason=rate_limit': 1,
      });
    } finally {
      await retrying.close();
    }
  });

  it('stops observing a closed switchboard', async () => {
    await ask();
    expect(byAttributes((await read(reader)).healthy_deployments_count)).toEqual({
      'model=gpt-4o-mini': 2,
      'model=claude-sonnet-5': 1,
    });
    await sb.close();
    state('east').markDown();
    state('west').markDown();
    // The gauges' callbacks are gone: the SDK repeats the last observation, nothing new.
    const data = await read(reader);
    expect(byAttributes(data.healthy_deployments_count)['model=gpt-4o-mini']).toBe(2);
    expect(byAttributes(data.utilization)['deployment=east,model=gpt-4o-mini']).toBeLessThan(1);
    // Counters keep what was counted.
    expect(Object.values(byAttributes(data.requests))).toEqual([1]);
  });
});

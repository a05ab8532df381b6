import { metrics, type Attributes } from '@opentelemetry/api';
import { MeterProvider, type MetricReader, type DataPoint } from '@opentelemetry/sdk-metrics';
import { InternalServerError } from '@anthropic-ai/sdk';
import { RateLimitError } from 'openai';
import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import { METER_NAME, SWITCHBOARD_METRICS } from 'nestjs-switchboard/extend';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { FakeClock } from '../support/random';
import '../support/quiet-logs';
import { TestReader } from '../support/metric-reader';

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-sonnet-5';

/** Every data point of the switchboard's meter, by instrument name. */
async function read(reader: MetricReader): Promise<Record<string, DataPoint<number>[]>> {
  const { resourceMetrics, errors } = await reader.collect();
  expect(errors).toEqual([]);
  const out: Record<string, DataPoint<number>[]> = {};
  for (const scope of resourceMetrics.scopeMetrics) {
    if (scope.scope.name !== METER_NAME) continue;
    for (const metric of scope.metrics) {
      // Keyed without the common prefix: `switchboard.requests` -> `requests`.
      const name = metric.descriptor.name.replace(/^switchboard\./, '');
      out[name] = metric.dataPoints as DataPoint<number>[];
    }
  }
  return out;
}

/**
 * `{ 'deployment=east,model=gpt-4o-mini': 2, ... }`: points keyed by sorted attributes. Counters
 * start at 0 for every known label set; `counted` leaves those zeros out.
 */
function byAttributes(points: DataPoint<number>[] | undefined): Record<string, number> {
  const key = (attributes: Attributes) =>
    Object.keys(attributes)
      .sort()
      .map((k) => `${k}=${String(attributes[k])}`)
      .join(',');
  return Object.fromEntries((points ?? []).map((p) => [key(p.attributes), p.value]));
}

/** {@link byAttributes} without the points still at 0. */
function counted(points: DataPoint<number>[] | undefined): Record<string, number> {
  return byAttributes((points ?? []).filter((p) => p.value !== 0));
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
    expect(counted(data.requests)).toEqual({ 'deployment=east,model=gpt-4o-mini': 3 });
    expect(counted(data.failures)).toEqual({
      'deployment=east,model=gpt-4o-mini,reason=rate_limit': 1,
    });
    expect(byAttributes(data.healthy_deployments)).toEqual({
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
    expect(counted(data.requests)).toEqual({
      'deployment=east,model=gpt-4o-mini': 3,
      'deployment=west,model=gpt-4o-mini': 1,
      'deployment=foundry,model=claude-sonnet-5': 2,
    });
    expect(counted(data.failures)).toEqual({
      'deployment=east,model=gpt-4o-mini,reason=rate_limit': 1,
      'deployment=foundry,model=claude-sonnet-5,reason=server_error': 1,
    });
    expect(byAttributes(data.healthy_deployments)).toEqual({
      'model=gpt-4o-mini': 1,
      'model=claude-sonnet-5': 1,
    });
    const util = byAttributes(data.utilization);
    expect(util['deployment=east,model=gpt-4o-mini']).toBe(1);
    // One request of 10 per minute; its few tokens weigh less than that against 10 000 TPM.
    expect(util['deployment=west,model=gpt-4o-mini']).toBeCloseTo(0.1, 5);
    // Two requests of a bucket of 4, the failed one included.
    expect(util['deployment=foundry,model=claude-sonnet-5']).toBeCloseTo(0.5, 5);

    // The cooldown ends on the clock: the gauges follow without any call.
    clock.advance(20_000);
    data = await read(reader);
    expect(byAttributes(data.healthy_deployments)['model=gpt-4o-mini']).toBe(2);
    expect(byAttributes(data.utilization)['deployment=east,model=gpt-4o-mini']).toBeCloseTo(0.3, 5);
  });

  it('exports every counter and gauge from start-up, at 0, under one prefix and one scope', async () => {
    const { resourceMetrics } = await reader.collect();
    expect(resourceMetrics.scopeMetrics.map((s) => s.scope.name)).toEqual([METER_NAME]);
    const names = resourceMetrics.scopeMetrics[0]!.metrics.map((m) => m.descriptor.name).sort();
    expect(names).toEqual(
      [
        SWITCHBOARD_METRICS.REQUESTS,
        SWITCHBOARD_METRICS.FAILURES,
        SWITCHBOARD_METRICS.RETRIES,
        SWITCHBOARD_METRICS.CALL_FAILURES,
        SWITCHBOARD_METRICS.TAG_REFUSALS,
        SWITCHBOARD_METRICS.LEARNED_RULES,
        SWITCHBOARD_METRICS.HEALTHY_DEPLOYMENTS,
        SWITCHBOARD_METRICS.UTILIZATION,
        SWITCHBOARD_METRICS.QUOTA_LIMIT,
        SWITCHBOARD_METRICS.QUOTA_REMAINING,
        SWITCHBOARD_METRICS.QUEUE_LENGTH,
        SWITCHBOARD_METRICS.QUEUE_OLDEST_WAIT,
      ].sort(),
    );
    const data = await read(reader);
    expect(byAttributes(data.requests)).toEqual({
      'deployment=east,model=gpt-4o-mini': 0,
      'deployment=west,model=gpt-4o-mini': 0,
      'deployment=foundry,model=claude-sonnet-5': 0,
    });
    expect(byAttributes(data.failures)).toMatchObject({
      'deployment=east,model=gpt-4o-mini,reason=rate_limit': 0,
      'deployment=foundry,model=claude-sonnet-5,reason=server_error': 0,
      'deployment=west,model=gpt-4o-mini,reason=connection': 0,
    });
    expect(byAttributes(data.call_failures)).toEqual({
      'model=gpt-4o-mini,reason=no_room': 0,
      'model=gpt-4o-mini,reason=rate_limit': 0,
      'model=gpt-4o-mini,reason=other': 0,
      'model=claude-sonnet-5,reason=no_room': 0,
      'model=claude-sonnet-5,reason=rate_limit': 0,
      'model=claude-sonnet-5,reason=other': 0,
    });
    expect(byAttributes(data['queue.length'])).toEqual({
      'model=gpt-4o-mini': 0,
      'model=claude-sonnet-5': 0,
    });
    expect(byAttributes(data['quota.limit'])).toEqual({
      'deployment=east,limit=rpm,model=gpt-4o-mini': 10,
      'deployment=east,limit=tpm,model=gpt-4o-mini': 10_000,
      'deployment=west,limit=rpm,model=gpt-4o-mini': 10,
      'deployment=west,limit=tpm,model=gpt-4o-mini': 10_000,
      'deployment=foundry,limit=rpm,model=claude-sonnet-5': 4,
      'deployment=foundry,limit=tpm,model=claude-sonnet-5': 0,
    });
  });

  it('tells 429s held back (nothing sent) from 429s received, and what is left of each quota', async () => {
    for (const d of ['east', 'west']) state(d).spend(0, 10);
    await expect(ask()).rejects.toBeInstanceOf(RateLimitError);
    let data = await read(reader);
    expect(counted(data.call_failures)).toEqual({ 'model=gpt-4o-mini,reason=no_room': 1 });
    expect(counted(data.failures)).toEqual({});
    expect(byAttributes(data['quota.remaining'])).toMatchObject({
      'deployment=east,limit=rpm,model=gpt-4o-mini': 0,
      'deployment=foundry,limit=rpm,model=claude-sonnet-5': 4,
    });

    sb.resetUsage();
    await askClaude();
    upstream.deployment('foundry').fail({ kind: 'status', status: 429, retryAfterMs: 5_000 });
    await expect(askClaude()).rejects.toThrow('429');
    data = await read(reader);
    expect(counted(data.call_failures)).toEqual({
      'model=gpt-4o-mini,reason=no_room': 1,
      'model=claude-sonnet-5,reason=rate_limit': 1,
    });
    expect(counted(data.failures)).toEqual({
      'deployment=foundry,model=claude-sonnet-5,reason=rate_limit': 1,
    });
    // The answered call counts against what is left of the minute's four requests.
    const left = byAttributes(data['quota.remaining']);
    expect(left['deployment=foundry,limit=rpm,model=claude-sonnet-5']).toBeLessThanOrEqual(3);
    expect(left['deployment=east,limit=rpm,model=gpt-4o-mini']).toBe(10);
  });

  it('shows the calls waiting for room and how long the oldest has waited', async () => {
    const queued = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: upstream.deployment('east').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: GPT, rpm: 1 }],
        },
      ],
      queue: { maxWait: 60_000 },
      ratelimitWindow: 0,
      clock: clock.now,
    });
    queued.deployments.get('east')!.models.get(GPT)!.spend(0, 1);
    const waiting = queued.chat.completions
      .create({ model: GPT, messages: [{ role: 'user', content: 'wait' }] })
      .catch((e: unknown) => e);
    clock.advance(1_500);
    const points = (await reader.collect()).resourceMetrics.scopeMetrics[0]!.metrics;
    const of = (name: string) =>
      byAttributes(
        points
          .filter((m) => m.descriptor.name === name)
          .flatMap((m) => m.dataPoints as DataPoint<number>[])
          .filter((p) => p.attributes.model === GPT),
      );
    expect(of(SWITCHBOARD_METRICS.QUEUE_LENGTH)).toEqual({ 'model=gpt-4o-mini': 1 });
    expect(of(SWITCHBOARD_METRICS.QUEUE_OLDEST_WAIT)).toEqual({ 'model=gpt-4o-mini': 1.5 });
    await queued.close();
    expect(await waiting).toMatchObject({ code: 'unavailable' });
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
      expect(counted(data.retries)).toEqual({
        'deployment=east,model=gpt-4o-mini,reason=server_error': 1,
        'deployment=west,model=gpt-4o-mini,reason=rate_limit': 1,
      });
    } finally {
      await retrying.close();
    }
  });

  it('stops observing a closed switchboard', async () => {
    await ask();
    expect(byAttributes((await read(reader)).healthy_deployments)).toEqual({
      'model=gpt-4o-mini': 2,
      'model=claude-sonnet-5': 1,
    });
    await sb.close();
    state('east').markDown();
    state('west').markDown();
    // The gauges' callbacks are gone: the SDK repeats the last observation, nothing new.
    const data = await read(reader);
    expect(byAttributes(data.healthy_deployments)['model=gpt-4o-mini']).toBe(2);
    expect(byAttributes(data.utilization)['deployment=east,model=gpt-4o-mini']).toBeLessThan(1);
    // Counters keep what was counted.
    expect(Object.values(counted(data.requests))).toEqual([1]);
  });
});

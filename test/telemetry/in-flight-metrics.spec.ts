import { metrics } from '@opentelemetry/api';
import { MeterProvider, type MetricReader, type DataPoint } from '@opentelemetry/sdk-metrics';
import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import { METER_NAME, SWITCHBOARD_METRICS as M } from 'nestjs-switchboard/extend';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { FakeClock } from '../support/random';
import { TestReader } from '../support/metric-reader';

const GPT = 'gpt-4o-mini';

/** `{ [instrument]: { [deployment]: value } }` of the switchboard's meter. */
async function read(reader: MetricReader): Promise<Record<string, Record<string, number>>> {
  const { resourceMetrics, errors } = await reader.collect();
  expect(errors).toEqual([]);
  const out: Record<string, Record<string, number>> = {};
  for (const scope of resourceMetrics.scopeMetrics) {
    if (scope.scope.name !== METER_NAME) continue;
    for (const metric of scope.metrics) {
      out[metric.descriptor.name] = Object.fromEntries(
        (metric.dataPoints as DataPoint<number>[]).map((p) => [
          String(p.attributes.deployment),
          p.value,
        ]),
      );
    }
  }
  return out;
}

describe('calls in flight and latency as metrics', () => {
  let upstream: SimulatedUpstream;
  let reader: TestReader;
  let provider: MeterProvider;
  let sb: Switchboard;
  const clock = new FakeClock();

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'capped' }, { name: 'open' }],
    });
    reader = new TestReader();
    provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
    sb = createSwitchboard({
      deployments: ['capped', 'open'].map((name) => ({
        provider: 'openai' as const,
        name,
        baseURL: upstream.deployment(name).openaiBaseURL,
        apiKey: 'k',
        maxInFlight: name === 'capped' ? 4 : undefined,
        models: [{ name: GPT }],
      })),
      ratelimitWindow: 0,
      clock: clock.now,
    });
  });
  afterAll(async () => {
    await sb.close();
    await provider.shutdown();
    metrics.disable();
    await upstream.close();
  });

  it('exports calls in flight and the cap from start-up where a cap is set; latency once measured', async () => {
    const data = await read(reader);
    expect(data[M.IN_FLIGHT]).toEqual({ capped: 0 });
    expect(data[M.IN_FLIGHT_LIMIT]).toEqual({ capped: 4 });
    expect(data[M.LATENCY_FIRST_TOKEN]).toBeUndefined();
    expect(data[M.LATENCY_PER_TOKEN]).toBeUndefined();
  });

  it('counts a call in flight while it lasts, and reports its latency in seconds', async () => {
    const open = upstream.deployment('open');
    sb.deployments.get('capped')!.models.get(GPT)!.markDown(60_000);
    const pending = sb.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    await open.waitFor((d) => d.stats.inFlight === 1);
    expect((await read(reader))[M.IN_FLIGHT]).toEqual({ capped: 0, open: 1 });
    clock.advance(1_500);
    const answer = await pending;
    const data = await read(reader);
    expect(data[M.IN_FLIGHT]).toEqual({ capped: 0, open: 0 });
    const tokens = answer.usage!.completion_tokens;
    expect(data[M.LATENCY_PER_TOKEN]!.open).toBeCloseTo(1.5 / tokens, 6);
  });
});

/**
 * The scheduler's metrics, per lane and tenant: calls admitted, queued, seconds waited, batch
 * calls held back for the headroom, and calls waiting now; tenant labels bounded.
 */
import { metrics, type Attributes } from '@opentelemetry/api';
import { MeterProvider, type MetricReader, type DataPoint } from '@opentelemetry/sdk-metrics';
import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import { METER_NAME, SWITCHBOARD_METRICS as M } from 'nestjs-switchboard/extend';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { MAX_TENANT_LABELS } from '../../src/telemetry/metric-names';
import { eventually } from '../support/eventually';
import { FakeClock } from '../support/random';
import { TestReader } from '../support/metric-reader';

const GPT = 'gpt-4o-mini';

/** Points of `name` for GPT, keyed `lane/tenant`. */
async function points(reader: MetricReader, name: string): Promise<Record<string, number>> {
  const { resourceMetrics } = await reader.collect();
  const out: Record<string, number> = {};
  for (const scope of resourceMetrics.scopeMetrics) {
    if (scope.scope.name !== METER_NAME) continue;
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name) continue;
      for (const p of metric.dataPoints as DataPoint<number>[]) {
        const a: Attributes = p.attributes;
        if (a.model === GPT) out[`${String(a.lane)}/${String(a.tenant)}`] = p.value;
      }
    }
  }
  return out;
}

describe('lane metrics', () => {
  let upstream: SimulatedUpstream;
  let reader: TestReader;
  let sb: Switchboard | undefined;

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({ deployments: [{ name: 'east' }] });
  });
  afterAll(() => upstream.close());
  beforeEach(() => {
    reader = new TestReader();
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
  });
  afterEach(async () => {
    await sb?.close();
    sb = undefined;
    metrics.disable();
    upstream.reset();
  });

  const build = (clock: FakeClock, tpm?: number) =>
    createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: upstream.deployment('east').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: GPT, tpm }],
        },
      ],
      queue: { maxWait: 60_000, batchHeadroom: 0.5, headroomHold: 50 },
      ratelimitWindow: 0,
      clock: clock.now,
    });

  const ask = (extra: object) => ({
    model: GPT,
    max_tokens: 100,
    messages: [{ role: 'user' as const, content: 'x' }],
    ...extra,
  });

  it('counts admitted, queued, waited and held back per lane and tenant, all from 0', async () => {
    const clock = new FakeClock();
    sb = build(clock, 1_000);
    const board = sb;
    expect(await points(reader, M.LANE_ADMITTED)).toEqual({
      'interactive/none': 0,
      'batch/none': 0,
    });
    expect(await points(reader, M.LANE_WAITING)).toEqual({
      'interactive/none': 0,
      'batch/none': 0,
    });

    // 101 tokens a call. An interactive call: batch calls now keep half of the 1 000 free.
    await board.chat.completions.create(ask({ tenant: 'acme' }));
    const jobs = Array.from({ length: 5 }, () =>
      board.chat.completions.create(ask({ lane: 'batch', tenant: 'nightly' })),
    );
    await eventually(() => board.queue!.length(GPT) === 2, { what: 'two batch calls to wait' });
    expect(await points(reader, M.LANE_ADMITTED)).toMatchObject({
      'interactive/acme': 1,
      'batch/nightly': 3,
    });
    expect(await points(reader, M.LANE_QUEUED)).toMatchObject({ 'batch/nightly': 2 });
    expect(await points(reader, M.LANE_HELD_BACK)).toMatchObject({
      'batch/nightly': 1,
      'interactive/acme': 0,
    });
    expect(await points(reader, M.LANE_WAITING)).toMatchObject({ 'batch/nightly': 2 });

    // The interactive traffic is over: the batch calls take the rest.
    clock.advance(100);
    await Promise.all(jobs);
    expect(await points(reader, M.LANE_ADMITTED)).toMatchObject({ 'batch/nightly': 5 });
    expect((await points(reader, M.LANE_WAITED))['batch/nightly']).toBeCloseTo(0.2, 5);
    expect(await points(reader, M.LANE_WAITING)).toMatchObject({ 'batch/nightly': 0 });
  });

  it(`labels the first ${MAX_TENANT_LABELS} tenants by name, the rest as other`, async () => {
    sb = build(new FakeClock());
    for (let i = 0; i < MAX_TENANT_LABELS + 5; i++) {
      await sb.chat.completions.create(ask({ tenant: `t${i}` }));
    }
    const admitted = await points(reader, M.LANE_ADMITTED);
    expect(admitted['interactive/other']).toBe(5);
    expect(admitted[`interactive/t${MAX_TENANT_LABELS - 1}`]).toBe(1);
    expect(admitted[`interactive/t${MAX_TENANT_LABELS}`]).toBeUndefined();
    // Both lanes, none + other + the named ones.
    expect(Object.keys(admitted)).toHaveLength(2 * (MAX_TENANT_LABELS + 2));
  });
});

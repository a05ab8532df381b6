/**
 * A hit is free: no quota, no tenant limit, no budget; it is counted as a hit with the money it
 * saved, and its GenAI span says it came from the cache.
 */
import { metrics, trace, type Attributes } from '@opentelemetry/api';
import { MeterProvider, type DataPoint } from '@opentelemetry/sdk-metrics';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import OpenAI from 'openai';
import { METER_NAME, SWITCHBOARD_METRICS } from 'nestjs-switchboard/extend';
import { costOf } from '../../src/tenants/price';
import { TestReader } from '../support/metric-reader';
import { ask, GPT, rig, type Rig } from '../support/upstream';

const PRICE = { input: 0.15, output: 0.6 };

describe('cache hits are free', () => {
  let r: Rig | undefined;
  afterEach(async () => {
    await r?.close();
    r = undefined;
    metrics.disable();
    trace.disable();
  });

  it('a tenant at its rpm limit and budget is still answered from the cache, charged nothing', async () => {
    r = await rig({
      openai: 1,
      cache: { ttl: 60_000 },
      pricing: { [GPT]: PRICE },
      tenants: { acme: { rpm: 1, budget: { usd: 1, per: 'day' } } },
    });
    await r.sb.chat.completions.create(ask('once', { tenant: 'acme' }));
    const spent = r.sb.costs().acme;
    const usage = () => {
      const { tpm, rpm } = r!.sb.stats().oai0![GPT]!;
      return { tpm, rpm };
    };
    const used = usage();
    // Over its rpm for any new question...
    await expect(
      r.sb.chat.completions.create(ask('something new', { tenant: 'acme' })),
    ).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    // ...and answered from the cache all the same, at no cost.
    for (let i = 0; i < 5; i++) await r.sb.chat.completions.create(ask('once', { tenant: 'acme' }));
    expect(r.upstream.deployment('oai0').stats.requests).toBe(1);
    expect(r.sb.costs().acme).toBe(spent);
    expect(usage()).toEqual(used);
  });

  it('counts hit, miss and bypass per model, the USD saved, and makes a span saying cache hit', async () => {
    const reader = new TestReader();
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
    const exporter = new InMemorySpanExporter();
    trace.setGlobalTracerProvider(
      new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }),
    );
    r = await rig({ openai: 1, cache: { ttl: 60_000 }, pricing: { [GPT]: PRICE } });
    const first = await r.sb.chat.completions.create(ask('priced'));
    await r.sb.chat.completions.create(ask('priced'));
    await r.sb.chat.completions.create(ask('priced'));
    await r.sb.chat.completions.create(ask('priced', { cache: false }));
    const { resourceMetrics } = await reader.collect();
    const ours = resourceMetrics.scopeMetrics
      .filter((s) => s.scope.name === METER_NAME)
      .flatMap((s) => s.metrics);
    const points = (name: string) =>
      (ours.find((m) => m.descriptor.name === name)?.dataPoints ?? []) as DataPoint<number>[];
    const byResult = Object.fromEntries(
      points(SWITCHBOARD_METRICS.CACHE).map((p) => [(p.attributes as Attributes).result, p.value]),
    );
    expect(byResult).toEqual({ hit: 2, miss: 1, bypass: 1 });
    const usage = first.usage!;
    const once = costOf(
      PRICE,
      { input: usage.prompt_tokens, output: usage.completion_tokens },
      'openai',
    );
    const saved = points(SWITCHBOARD_METRICS.CACHE_SAVED)[0]!.value;
    expect(saved).toBeCloseTo(2 * once, 12);
    expect(saved).toBeGreaterThan(0);
    const hits = exporter
      .getFinishedSpans()
      .filter((s) => s.attributes['switchboard.cache'] === 'hit');
    expect(hits).toHaveLength(2);
    expect(hits[0]!.name).toBe(`chat ${GPT}`);
    expect(hits[0]!.attributes['switchboard.cache.deployment']).toBe('oai0');
    // Two attempts went to the deployment: the miss and the bypass.
    const attempts = exporter.getFinishedSpans().filter((s) => s.attributes['switchboard.attempt']);
    expect(attempts).toHaveLength(2);
  });
});

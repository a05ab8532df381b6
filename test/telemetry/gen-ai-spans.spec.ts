import { metrics, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { MeterProvider, type HistogramMetricData } from '@opentelemetry/sdk-metrics';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import { GEN_AI_SCOPE } from '../../src/telemetry/gen-ai-telemetry';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import '../support/quiet-logs';
import { TestReader } from '../support/metric-reader';

/** The switchboard's spans, without those an SDK records itself. */
function ours(exporter: InMemorySpanExporter) {
  return exporter.getFinishedSpans().filter((s) => s.instrumentationScope.name === GEN_AI_SCOPE);
}

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-sonnet-5';

describe('GenAI spans and histograms of real calls', () => {
  let upstream: SimulatedUpstream;
  let exporter: InMemorySpanExporter;
  let reader: TestReader;
  let sb: Switchboard;

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [
        { name: 'east', latency: 0 },
        { name: 'west', latency: 0 },
        { name: 'foundry', latency: 0 },
      ],
    });
  });
  afterAll(() => upstream.close());

  beforeEach(() => {
    // Registered after the library was imported, as main.ts does.
    exporter = new InMemorySpanExporter();
    trace.setGlobalTracerProvider(
      new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }),
    );
    reader = new TestReader();
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
    sb = createSwitchboard({
      deployments: [
        ...(['east', 'west'] as const).map((name) => ({
          provider: 'openai' as const,
          name,
          baseURL: upstream.deployment(name).openaiBaseURL,
          apiKey: 'k',
          models: [{ name: GPT }],
        })),
        {
          provider: 'anthropic',
          name: 'foundry',
          baseURL: upstream.deployment('foundry').anthropicBaseURL,
          apiKey: 'k',
          models: [{ name: CLAUDE }],
        },
      ],
      failover: { attempts: 2 },
    });
  });

  afterEach(async () => {
    await sb.close();
    upstream.reset();
    trace.disable();
    metrics.disable();
  });

  it('gives each attempt of a failed-over call its own CLIENT span', async () => {
    // east takes the call first (west is cooling), answers 429; the failover goes to west.
    sb.deployments.get('west')!.models.get(GPT)!.markDown(60_000);
    upstream.deployment('east').fail({ kind: 'status', status: 429, retryAfterMs: 60_000 });
    const completion = await sb.chat.completions.create({
      model: GPT,
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Hello there' }],
    });

    const spans = ours(exporter);
    expect(spans.map((s) => [s.name, s.kind, s.attributes['switchboard.deployment']])).toEqual([
      ['chat gpt-4o-mini', SpanKind.CLIENT, 'east'],
      ['chat gpt-4o-mini', SpanKind.CLIENT, 'west'],
    ]);
    const [first, second] = spans;
    expect(first!.status.code).toBe(SpanStatusCode.ERROR);
    expect(first!.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': GPT,
      'gen_ai.request.max_tokens': 50,
      'error.type': '429',
      'server.address': '127.0.0.1',
      'switchboard.attempt': 1,
      'switchboard.failure.reason': 'rate_limit',
    });
    expect(second!.status.code).toBe(SpanStatusCode.UNSET);
    expect(second!.attributes).toMatchObject({
      'switchboard.attempt': 2,
      'switchboard.failover.reason': 'rate_limit',
      'gen_ai.response.model': completion.model,
      'gen_ai.response.id': completion.id,
      'gen_ai.usage.input_tokens': completion.usage!.prompt_tokens,
      'gen_ai.usage.output_tokens': completion.usage!.completion_tokens,
    });
    expect(second!.attributes['error.type']).toBeUndefined();
    // No prompt or answer without the opt-in.
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain('Hello there');

    const { resourceMetrics } = await reader.collect();
    const scope = resourceMetrics.scopeMetrics.find((s) => s.scope.name === GEN_AI_SCOPE)!;
    const byName = Object.fromEntries(
      scope.metrics.map((m) => [m.descriptor.name, m as HistogramMetricData]),
    );
    const durations = byName['gen_ai.client.operation.duration']!.dataPoints;
    expect(
      durations.map((p) => `${String(p.attributes['error.type'] ?? 'ok')}:${p.value.count}`).sort(),
    ).toEqual(['429:1', 'ok:1']);
    const tokens = byName['gen_ai.client.token.usage']!.dataPoints;
    expect(
      Object.fromEntries(tokens.map((p) => [p.attributes['gen_ai.token.type'], p.value.sum])),
    ).toEqual({
      input: completion.usage!.prompt_tokens,
      output: completion.usage!.completion_tokens,
    });
  });

  it("keeps an upstream's key-shaped words out of the span: status and exception scrubbed", async () => {
    const key = '0123456789abcdef0123456789abcdef';
    upstream.deployment('east').fail({
      kind: 'status',
      status: 400,
      message: `Invalid header api-key: ${key}; Authorization: Bearer sk-proj-AbCdEf123456`,
    });
    sb.deployments.get('west')!.models.get(GPT)!.markDown(60_000);
    await expect(
      sb.chat.completions.create({ model: GPT, messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({ status: 400 });
    const [span] = ours(exporter);
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
    expect(span!.status.message).toContain('Invalid header api-key: [redacted]');
    const recorded = JSON.stringify({ status: span!.status, events: span!.events });
    expect(recorded).toContain('exception');
    expect(recorded).not.toContain(key);
    expect(recorded).not.toContain('sk-proj-AbCdEf');
  });

  it('ends a stream’s span with the usage its events reported', async () => {
    const stream = await sb.messages.create({
      model: CLAUDE,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Stream, please' }],
      stream: true,
    });
    let output = 0;
    let input = 0;
    for await (const event of stream) {
      if (event.type === 'message_start') input = event.message.usage.input_tokens;
      if (event.type === 'message_delta') output = event.usage.output_tokens;
    }
    // @anthropic-ai/sdk records a span of its own (anthropic.messages.create) beside ours.
    const spans = ours(exporter);
    expect(spans.map((s) => [s.name, s.attributes['switchboard.attempt']])).toEqual([
      ['chat claude-sonnet-5', 1],
    ]);
    const [span] = spans;
    expect(span!.name).toBe('chat claude-sonnet-5');
    expect(span!.attributes).toMatchObject({
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.usage.input_tokens': input,
      'gen_ai.usage.output_tokens': output,
      'switchboard.deployment': 'foundry',
      'switchboard.attempt': 1,
    });
    expect(output).toBeGreaterThan(0);
  });

  it('names an embeddings call’s span and measurements after the embeddings operation', async () => {
    const embedder = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: upstream.deployment('east').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: 'text-embedding-3-small' }],
        },
      ],
    });
    try {
      await embedder.embeddings.create({ model: 'text-embedding-3-small', input: 'hello' });
    } finally {
      await embedder.close();
    }
    const [span] = ours(exporter);
    expect(span!.name).toBe('embeddings text-embedding-3-small');
    expect(span!.attributes['gen_ai.operation.name']).toBe('embeddings');
    const duration = (await reader.collect()).resourceMetrics.scopeMetrics
      .flatMap((m) => m.metrics)
      .find((m) => m.descriptor.name === 'gen_ai.client.operation.duration') as
      HistogramMetricData | undefined;
    expect(duration!.dataPoints.map((p) => p.attributes['gen_ai.operation.name'])).toEqual([
      'embeddings',
    ]);
  });
});

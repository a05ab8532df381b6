import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import {
  MeterProvider,
  type HistogramMetricData,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace';
import { RateLimitError } from 'openai';
import {
  DURATION_BUCKETS,
  GEN_AI,
  GEN_AI_LATEST,
  GEN_AI_VALUES,
  TOKEN_BUCKETS,
  latestExperimental,
} from '../../src/telemetry/gen-ai-conventions';
import {
  GEN_AI_SCOPE,
  GenAiTelemetry,
  providerName,
  usageOf,
  type GenAiAttemptInfo,
} from '../../src/telemetry/gen-ai-telemetry';
import { TestReader } from '../support/metric-reader';

function setup(env: NodeJS.ProcessEnv = {}) {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  let now = 1_000;
  const clock = {
    advance: (ms: number) => (now += ms),
  };
  const telemetry = new GenAiTelemetry({ tracerProvider, meterProvider, env, now: () => now });
  const spans = (): ReadableSpan[] => exporter.getFinishedSpans();
  const histograms = async (): Promise<Record<string, HistogramMetricData>> => {
    const { resourceMetrics, errors } = await reader.collect();
    expect(errors).toEqual([]);
    const out: Record<string, HistogramMetricData> = {};
    for (const scope of resourceMetrics.scopeMetrics) {
      if (scope.scope.name !== GEN_AI_SCOPE) continue;
      for (const m of scope.metrics as MetricData[])
        out[m.descriptor.name] = m as HistogramMetricData;
    }
    return out;
  };
  return { telemetry, spans, histograms, clock };
}

const azure: GenAiAttemptInfo = {
  provider: 'openai',
  baseURL: 'https://east.openai.azure.com/openai/v1/',
  deployment: 'east',
  model: 'gpt-4o-mini',
  attempt: 1,
  body: { model: 'gpt-4o-mini', max_tokens: 256, messages: [{ role: 'user', content: 'secret' }] },
};

const completion = {
  id: 'chatcmpl-1',
  model: 'gpt-4o-mini-2024-07-18',
  choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'hi' } }],
  usage: {
    prompt_tokens: 120,
    completion_tokens: 30,
    total_tokens: 150,
    prompt_tokens_details: { cached_tokens: 100 },
  },
};

describe('GenAI semantic conventions', () => {
  it('uses the names of @opentelemetry/semantic-conventions/incubating', () => {
    // The subpath is in the package's exports only, which classic resolution does not read.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const names = require('@opentelemetry/semantic-conventions/incubating') as Record<
      string,
      unknown
    >;
    const expected: Record<string, string> = {
      OPERATION_NAME: 'ATTR_GEN_AI_OPERATION_NAME',
      PROVIDER_NAME: 'ATTR_GEN_AI_PROVIDER_NAME',
      REQUEST_MODEL: 'ATTR_GEN_AI_REQUEST_MODEL',
      REQUEST_MAX_TOKENS: 'ATTR_GEN_AI_REQUEST_MAX_TOKENS',
      RESPONSE_MODEL: 'ATTR_GEN_AI_RESPONSE_MODEL',
      RESPONSE_ID: 'ATTR_GEN_AI_RESPONSE_ID',
      RESPONSE_FINISH_REASONS: 'ATTR_GEN_AI_RESPONSE_FINISH_REASONS',
      USAGE_INPUT_TOKENS: 'ATTR_GEN_AI_USAGE_INPUT_TOKENS',
      USAGE_OUTPUT_TOKENS: 'ATTR_GEN_AI_USAGE_OUTPUT_TOKENS',
      USAGE_CACHE_READ_INPUT_TOKENS: 'ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS',
      USAGE_CACHE_CREATION_INPUT_TOKENS: 'ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS',
      TOKEN_TYPE: 'ATTR_GEN_AI_TOKEN_TYPE',
      INPUT_MESSAGES: 'ATTR_GEN_AI_INPUT_MESSAGES',
      OUTPUT_MESSAGES: 'ATTR_GEN_AI_OUTPUT_MESSAGES',
      SERVER_ADDRESS: 'ATTR_SERVER_ADDRESS',
      SERVER_PORT: 'ATTR_SERVER_PORT',
      ERROR_TYPE: 'ATTR_ERROR_TYPE',
      CLIENT_OPERATION_DURATION: 'METRIC_GEN_AI_CLIENT_OPERATION_DURATION',
      CLIENT_TOKEN_USAGE: 'METRIC_GEN_AI_CLIENT_TOKEN_USAGE',
    };
    for (const [key, constant] of Object.entries(expected)) {
      expect([key, GEN_AI[key as keyof typeof GEN_AI]]).toEqual([key, names[constant]]);
    }
    expect(GEN_AI_LATEST.REQUEST_STREAM).toBe(names.ATTR_GEN_AI_REQUEST_STREAM);
    expect(GEN_AI_LATEST.RESPONSE_TIME_TO_FIRST_CHUNK).toBe(
      names.ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
    );
    expect(GEN_AI_LATEST.CLIENT_OPERATION_TIME_TO_FIRST_CHUNK).toBe(
      names.METRIC_GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK,
    );
    expect(GEN_AI_VALUES.PROVIDER_AZURE_OPENAI).toBe(
      names.GEN_AI_PROVIDER_NAME_VALUE_AZURE_AI_OPENAI,
    );
    expect(GEN_AI_VALUES.PROVIDER_ANTHROPIC).toBe(names.GEN_AI_PROVIDER_NAME_VALUE_ANTHROPIC);
    expect(GEN_AI_VALUES.OPERATION_CHAT).toBe(names.GEN_AI_OPERATION_NAME_VALUE_CHAT);
    expect(GEN_AI_VALUES.TOKEN_INPUT).toBe(names.GEN_AI_TOKEN_TYPE_VALUE_INPUT);
    expect(GEN_AI_VALUES.TOKEN_OUTPUT).toBe(names.GEN_AI_TOKEN_TYPE_VALUE_OUTPUT);
  });

  it('reads the opt-in list', () => {
    expect(latestExperimental({})).toBe(false);
    expect(latestExperimental({ OTEL_SEMCONV_STABILITY_OPT_IN: 'http' })).toBe(false);
    expect(
      latestExperimental({ OTEL_SEMCONV_STABILITY_OPT_IN: 'http, gen_ai_latest_experimental' }),
    ).toBe(true);
  });

  it('names providers and counts usage as the conventions do', () => {
    expect(providerName('openai', 'https://east.openai.azure.com/openai/v1/')).toBe(
      'azure.ai.openai',
    );
    expect(providerName('openai', undefined)).toBe('openai');
    expect(providerName('openai', 'http://127.0.0.1:4000/v1')).toBe('openai');
    expect(providerName('anthropic', 'https://x.services.ai.azure.com/anthropic/')).toBe(
      'anthropic',
    );
    expect(
      usageOf('anthropic', {
        input_tokens: 10,
        output_tokens: 5,
        cache_read_input_tokens: 90,
        cache_creation_input_tokens: 20,
      }),
    ).toEqual({
      inputTokens: 120,
      outputTokens: 5,
      cacheReadInputTokens: 90,
      cacheCreationInputTokens: 20,
    });
    expect(usageOf('openai', completion.usage)).toEqual({
      inputTokens: 120,
      outputTokens: 30,
      cacheReadInputTokens: 100,
    });
  });
});

describe('GenAiTelemetry with a real tracer provider and meter provider', () => {
  it('records a CLIENT span and both histograms for a successful attempt', async () => {
    const { telemetry, spans, histograms, clock } = setup();
    const handle = telemetry.startAttempt(azure);
    clock.advance(250);
    handle.response(completion);
    handle.failed(new Error('late'), 'connection'); // after the end: ignored

    const [span, ...others] = spans();
    expect(others).toEqual([]);
    expect(span!.name).toBe('chat gpt-4o-mini');
    expect(span!.kind).toBe(SpanKind.CLIENT);
    expect(span!.status.code).toBe(SpanStatusCode.UNSET);
    expect(span!.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'azure.ai.openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.request.max_tokens': 256,
      'gen_ai.response.model': 'gpt-4o-mini-2024-07-18',
      'gen_ai.response.id': 'chatcmpl-1',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': 120,
      'gen_ai.usage.output_tokens': 30,
      'gen_ai.usage.cache_read.input_tokens': 100,
      'server.address': 'east.openai.azure.com',
      'server.port': 443,
      'switchboard.deployment': 'east',
      'switchboard.attempt': 1,
    });
    // No content without the opt-in.
    expect(JSON.stringify(span!.attributes)).not.toContain('secret');

    const h = await histograms();
    const duration = h['gen_ai.client.operation.duration']!;
    expect(duration.descriptor.unit).toBe('s');
    expect(duration.dataPoints).toHaveLength(1);
    expect(duration.dataPoints[0]!.value.sum).toBeCloseTo(0.25);
    expect(duration.dataPoints[0]!.value.buckets.boundaries).toEqual(DURATION_BUCKETS);
    expect(duration.dataPoints[0]!.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'azure.ai.openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.response.model': 'gpt-4o-mini-2024-07-18',
      'server.address': 'east.openai.azure.com',
      'server.port': 443,
    });
    const tokens = h['gen_ai.client.token.usage']!;
    expect(tokens.descriptor.unit).toBe('{token}');
    const byType = Object.fromEntries(
      tokens.dataPoints.map((p) => [p.attributes['gen_ai.token.type'], p.value.sum]),
    );
    expect(byType).toEqual({ input: 120, output: 30 });
    expect(tokens.dataPoints[0]!.value.buckets.boundaries).toEqual(TOKEN_BUCKETS);
    expect(h['gen_ai.client.operation.time_to_first_chunk']).toBeUndefined();
  });

  it('records a failed attempt with error.type, the reason and the failover context', async () => {
    const { telemetry, spans, histograms, clock } = setup();
    const handle = telemetry.startAttempt({
      ...azure,
      attempt: 2,
      failoverReason: 'connection',
    });
    clock.advance(40);
    const error = new RateLimitError(429, { message: 'slow down' }, 'slow down', new Headers());
    handle.failed(error, 'rate_limit');

    const [span] = spans();
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR, message: error.message });
    expect(span!.attributes).toMatchObject({
      'error.type': '429',
      'switchboard.attempt': 2,
      'switchboard.failover.reason': 'connection',
      'switchboard.failure.reason': 'rate_limit',
    });
    expect(span!.events.map((e) => e.name)).toEqual(['exception']);
    const h = await histograms();
    expect(h['gen_ai.client.operation.duration']!.dataPoints[0]!.attributes['error.type']).toBe(
      '429',
    );
    expect(h['gen_ai.client.token.usage']).toBeUndefined();
  });

  it('accumulates an Anthropic stream, with the newer streaming names behind the opt-in', async () => {
    const { telemetry, spans, histograms, clock } = setup({
      OTEL_SEMCONV_STABILITY_OPT_IN: 'gen_ai_latest_experimental',
    });
    const handle = telemetry.startAttempt({
      provider: 'anthropic',
      baseURL: 'http://127.0.0.1:4100/anthropic/',
      deployment: 'foundry1',
      model: 'claude-sonnet-5',
      attempt: 1,
      body: { model: 'claude-sonnet-5', max_tokens: 64, stream: true, messages: [] },
    });
    clock.advance(100);
    handle.event({
      type: 'message_start',
      message: {
        id: 'msg_1',
        model: 'claude-sonnet-5-20260101',
        usage: { input_tokens: 12, output_tokens: 1, cache_read_input_tokens: 8 },
      },
    });
    clock.advance(300);
    handle.event({ type: 'content_block_delta', delta: { type: 'text_delta', text: 'hi' } });
    handle.event({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn' },
      usage: { output_tokens: 7 },
    });
    handle.streamEnded();

    const [span] = spans();
    expect(span!.attributes).toMatchObject({
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.request.stream': true,
      'gen_ai.response.model': 'claude-sonnet-5-20260101',
      'gen_ai.response.id': 'msg_1',
      'gen_ai.response.finish_reasons': ['end_turn'],
      'gen_ai.usage.input_tokens': 20,
      'gen_ai.usage.cache_read.input_tokens': 8,
      'gen_ai.usage.output_tokens': 7,
      'gen_ai.response.time_to_first_chunk': 0.1,
      'server.address': '127.0.0.1',
      'server.port': 4100,
    });
    const h = await histograms();
    expect(h['gen_ai.client.operation.time_to_first_chunk']!.dataPoints[0]!.value.sum).toBeCloseTo(
      0.1,
    );
    expect(h['gen_ai.client.operation.duration']!.dataPoints[0]!.value.sum).toBeCloseTo(0.4);
  });

  it('carries prompts and completions only when content capture is opted in', () => {
    const { telemetry, spans } = setup({
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
    });
    telemetry.startAttempt(azure).response(completion);
    const [span] = spans();
    expect(span!.attributes['gen_ai.input.messages']).toBe(
      JSON.stringify([{ role: 'user', content: 'secret' }]),
    );
    expect(String(span!.attributes['gen_ai.output.messages'])).toContain('"content":"hi"');
  });
});

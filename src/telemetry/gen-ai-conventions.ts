/**
 * The OpenTelemetry GenAI semantic conventions the switchboard emits, as released in semantic
 * conventions v1.41, in one place. They are the values of the `ATTR_*` / `METRIC_*` constants of
 * `@opentelemetry/semantic-conventions/incubating` (a test compares them), written out here
 * because that entry loads close to a megabyte of constants at startup for these few names.
 *
 * @example
 * ```ts
 * span.setAttribute(GEN_AI.REQUEST_MODEL, 'gpt-4o-mini'); // 'gen_ai.request.model'
 * ```
 */
export const GEN_AI = {
  OPERATION_NAME: 'gen_ai.operation.name',
  PROVIDER_NAME: 'gen_ai.provider.name',
  REQUEST_MODEL: 'gen_ai.request.model',
  REQUEST_MAX_TOKENS: 'gen_ai.request.max_tokens',
  RESPONSE_MODEL: 'gen_ai.response.model',
  RESPONSE_ID: 'gen_ai.response.id',
  RESPONSE_FINISH_REASONS: 'gen_ai.response.finish_reasons',
  USAGE_INPUT_TOKENS: 'gen_ai.usage.input_tokens',
  USAGE_OUTPUT_TOKENS: 'gen_ai.usage.output_tokens',
  USAGE_CACHE_READ_INPUT_TOKENS: 'gen_ai.usage.cache_read.input_tokens',
  USAGE_CACHE_CREATION_INPUT_TOKENS: 'gen_ai.usage.cache_creation.input_tokens',
  TOKEN_TYPE: 'gen_ai.token.type',
  INPUT_MESSAGES: 'gen_ai.input.messages',
  OUTPUT_MESSAGES: 'gen_ai.output.messages',
  SERVER_ADDRESS: 'server.address',
  SERVER_PORT: 'server.port',
  ERROR_TYPE: 'error.type',
  /** Histogram, seconds. */
  CLIENT_OPERATION_DURATION: 'gen_ai.client.operation.duration',
  /** Histogram, `{token}`. */
  CLIENT_TOKEN_USAGE: 'gen_ai.client.token.usage',
} as const;

/**
 * Names still moving in the GenAI conventions, emitted only with
 * `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`: the streaming timings.
 *
 * @example
 * ```ts
 * if (latestExperimental()) span.setAttribute(GEN_AI_LATEST.REQUEST_STREAM, true);
 * ```
 */
export const GEN_AI_LATEST = {
  REQUEST_STREAM: 'gen_ai.request.stream',
  RESPONSE_TIME_TO_FIRST_CHUNK: 'gen_ai.response.time_to_first_chunk',
  /** Histogram, seconds. */
  CLIENT_OPERATION_TIME_TO_FIRST_CHUNK: 'gen_ai.client.operation.time_to_first_chunk',
} as const;

/**
 * Values of `gen_ai.operation.name`, `gen_ai.provider.name` and `gen_ai.token.type`.
 *
 * @example
 * ```ts
 * const provider: GenAiProviderName = GEN_AI_VALUES.PROVIDER_AZURE_OPENAI; // 'azure.ai.openai'
 * ```
 */
export const GEN_AI_VALUES = {
  OPERATION_CHAT: 'chat',
  OPERATION_EMBEDDINGS: 'embeddings',
  PROVIDER_OPENAI: 'openai',
  PROVIDER_AZURE_OPENAI: 'azure.ai.openai',
  PROVIDER_ANTHROPIC: 'anthropic',
  TOKEN_INPUT: 'input',
  TOKEN_OUTPUT: 'output',
} as const;

/**
 * The conventions' `ExplicitBucketBoundaries` for `gen_ai.client.operation.duration` (seconds).
 *
 * @example
 * ```ts
 * meter.createHistogram(GEN_AI.CLIENT_OPERATION_DURATION, { unit: 's', advice: { explicitBucketBoundaries: DURATION_BUCKETS } });
 * ```
 */
export const DURATION_BUCKETS: readonly number[] = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/**
 * The conventions' `ExplicitBucketBoundaries` for `gen_ai.client.token.usage`.
 *
 * @example
 * ```ts
 * meter.createHistogram(GEN_AI.CLIENT_TOKEN_USAGE, { unit: '{token}', advice: { explicitBucketBoundaries: TOKEN_BUCKETS } });
 * ```
 */
export const TOKEN_BUCKETS: readonly number[] = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
];

/**
 * True when `OTEL_SEMCONV_STABILITY_OPT_IN` (a comma-separated list) names
 * `gen_ai_latest_experimental`.
 *
 * @example
 * ```ts
 * latestExperimental({ OTEL_SEMCONV_STABILITY_OPT_IN: 'http,gen_ai_latest_experimental' }); // true
 * ```
 */
export function latestExperimental(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.OTEL_SEMCONV_STABILITY_OPT_IN ?? '')
    .split(',')
    .some((v) => v.trim() === 'gen_ai_latest_experimental');
}

/**
 * True when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` is `true`: only then do spans
 * carry prompts and completions (`gen_ai.input.messages`, `gen_ai.output.messages`).
 *
 * @example
 * ```ts
 * captureContent({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' }); // true
 * ```
 */
export function captureContent(env: NodeJS.ProcessEnv = process.env): boolean {
  return (
    (env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT ?? '').trim().toLowerCase() === 'true'
  );
}

import {
  ProxyTracerProvider,
  SpanKind,
  createNoopMeter,
  metrics,
  trace,
  type Attributes,
  type Histogram,
  type MeterProvider,
  type Span,
  type TracerProvider,
  type Tracer,
} from '@opentelemetry/api';
import { Attempt, type AttemptOutcome, type GenAiAttempt } from './gen-ai-attempt';
import { providerName, serverAttributes, setIfNumber } from './gen-ai-attributes';
import {
  DURATION_BUCKETS,
  GEN_AI,
  GEN_AI_LATEST,
  GEN_AI_VALUES,
  TOKEN_BUCKETS,
  captureContent,
  latestExperimental,
} from './gen-ai-conventions';

import { METER_NAME } from './metric-names';
import type { Lane } from '../scheduling/lanes';

export { providerName, usageOf } from './gen-ai-attributes';

/** The tracer's and the GenAI meter's instrumentation scope name: the switchboard's one scope. */
export const GEN_AI_SCOPE = METER_NAME;

/** What the API's global tracer provider delegates to while no SDK is registered. */
const NO_TRACER_PROVIDER = new ProxyTracerProvider().getDelegate();
/** The class of the API's meters while no SDK is registered. */
const NoopMeter = createNoopMeter().constructor;

/** The attempt of a switchboard that neither traces nor measures: nothing to do. */
const NOTHING: GenAiAttempt = Object.freeze({
  response: () => undefined,
  event: () => undefined,
  streamEnded: () => undefined,
  succeeded: () => undefined,
  failed: () => undefined,
  cost: () => undefined,
});

/**
 * The `gen_ai.operation.name` of an attempt: `chat` (Chat Completions, Responses, Messages) or
 * `embeddings`.
 *
 * @example
 * ```ts
 * const operation: GenAiOperationName = 'embeddings';
 * ```
 */
export type GenAiOperationName =
  typeof GEN_AI_VALUES.OPERATION_CHAT | typeof GEN_AI_VALUES.OPERATION_EMBEDDINGS;

/**
 * What an attempt is, for its span and histograms.
 *
 * @example
 * ```ts
 * const info: GenAiAttemptInfo = {
 *   provider: 'openai', baseURL: 'https://east.openai.azure.com/openai/v1/', deployment: 'east',
 *   model: 'gpt-4o-mini', attempt: 1, body,
 * };
 * ```
 */
export interface GenAiAttemptInfo {
  /** The deployment's provider: `openai` (OpenAI, Azure OpenAI) or `anthropic` (Claude). */
  provider: 'openai' | 'anthropic';
  /** The deployment's base URL, for `server.address` / `server.port` and Azure detection. */
  baseURL: string | undefined;
  /** The deployment's name. */
  deployment: string;
  /** The requested model. */
  model: string;
  /** 1 for the first attempt of a call, 2 for its first failover, ... */
  attempt: number;
  /** Why the previous attempt of this call failed (absent on the first). */
  failoverReason?: string;
  /** The request body as sent (for max_tokens, stream, and content when captured). */
  body?: Readonly<Record<string, unknown>>;
  /** `gen_ai.operation.name`: `embeddings` for an embeddings call; default `chat`. */
  operation?: GenAiOperationName;
}

/**
 * What a call's record needs from its dispatch: when the caller made it, its lane and tenant.
 * Its attempts carry it ({@link AttemptContext.call}) to `recordTraffic`'s recorder.
 *
 * @example
 * ```ts
 * const call: RecordedCall = { t: clock(), lane: 'interactive', tenant: 'acme' };
 * ```
 */
export interface RecordedCall {
  readonly t: number;
  readonly lane: Lane;
  readonly tenant: string;
}

/**
 * Which attempt of its call an attempt is, for its span.
 *
 * @example
 * ```ts
 * const second: AttemptContext = { attempt: 2, failoverReason: 'rate_limit' };
 * ```
 */
export interface AttemptContext {
  /** 1 for the first attempt of a call, 2 for its first failover, ... */
  attempt: number;
  /** Why the previous attempt failed. */
  failoverReason?: string;
  /** The call the attempt belongs to, when `recordTraffic` writes it down. */
  call?: RecordedCall;
}

/**
 * What an attempt tells its span: how it ended.
 *
 * @example
 * ```ts
 * const trace: AttemptTrace | undefined = hooks.started?.(deployment, state, request, context);
 * trace?.response(result);
 * ```
 */
export type AttemptTrace = Pick<
  GenAiAttempt,
  'response' | 'event' | 'streamEnded' | 'failed' | 'cost'
>;

/**
 * Options of {@link GenAiTelemetry}; all default to the global OpenTelemetry providers and
 * `process.env`.
 *
 * @example
 * ```ts
 * new GenAiTelemetry({ tracerProvider, meterProvider, now: () => clock.now() });
 * ```
 */
interface GenAiTelemetryOptions {
  tracerProvider?: TracerProvider;
  meterProvider?: MeterProvider;
  /** Milliseconds, for durations; default `performance.now`. */
  now?: () => number;
  /** Where `OTEL_SEMCONV_STABILITY_OPT_IN` and the content opt-in are read. */
  env?: NodeJS.ProcessEnv;
}

/**
 * The OpenTelemetry GenAI client conventions for the switchboard's attempts: per attempt a CLIENT
 * span `{gen_ai.operation.name} {gen_ai.request.model}` (e.g. `chat gpt-4o-mini`), and the
 * histograms `gen_ai.client.operation.duration` and `gen_ai.client.token.usage`. The tracer and
 * meter are taken when this is built (not at import), so providers registered in `main.ts` after
 * the imports receive the data; without providers, everything is a no-op.
 *
 * Span attributes: `gen_ai.operation.name`, `gen_ai.provider.name` (`azure.ai.openai`, `openai`,
 * `anthropic`), `gen_ai.request.model`, `gen_ai.request.max_tokens`, `gen_ai.response.model`,
 * `gen_ai.response.id`, `gen_ai.response.finish_reasons`, `gen_ai.usage.*`, `server.address`,
 * `server.port`, `error.type`, and the switchboard's own `switchboard.deployment`,
 * `switchboard.attempt`, `switchboard.failover.reason` (why the previous attempt failed) and
 * `switchboard.failure.reason`. Prompts and completions only with
 * `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
 *
 * @example
 * ```ts
 * const telemetry = new GenAiTelemetry();
 * const handle = telemetry.startAttempt({ provider: 'anthropic', baseURL, deployment: 'foundry1',
 *   model: 'claude-sonnet-5', attempt: 1, body });
 * handle.response(message);
 * ```
 */
export class GenAiTelemetry {
  private readonly tracer: Tracer;
  private readonly duration: Histogram;
  private readonly tokens: Histogram;
  private readonly firstChunk: Histogram | undefined;
  private readonly now: () => number;
  private readonly latest: boolean;
  private readonly content: boolean;
  private readonly baseURLs = new Map<string, string>();
  private readonly endpoints = new Map<string, Attributes>();
  /** The global provider, which may get its delegate (an SDK) only after this was built. */
  private readonly proxy: ProxyTracerProvider | undefined;
  /** False when the meter is the API's no-op one: no histogram would record anything. */
  private readonly measured: boolean;

  constructor(options: GenAiTelemetryOptions = {}) {
    const env = options.env ?? process.env;
    const tracerProvider = options.tracerProvider ?? trace.getTracerProvider();
    this.proxy = tracerProvider instanceof ProxyTracerProvider ? tracerProvider : undefined;
    this.tracer = tracerProvider.getTracer(GEN_AI_SCOPE);
    const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(GEN_AI_SCOPE);
    this.measured = !(meter instanceof NoopMeter);
    this.duration = meter.createHistogram(GEN_AI.CLIENT_OPERATION_DURATION, {
      description: 'GenAI operation duration.',
      unit: 's',
      advice: { explicitBucketBoundaries: [...DURATION_BUCKETS] },
    });
    this.tokens = meter.createHistogram(GEN_AI.CLIENT_TOKEN_USAGE, {
      description: 'Number of input and output tokens used.',
      unit: '{token}',
      advice: { explicitBucketBoundaries: [...TOKEN_BUCKETS] },
    });
    this.latest = latestExperimental(env);
    this.content = captureContent(env);
    this.firstChunk = this.latest
      ? meter.createHistogram(GEN_AI_LATEST.CLIENT_OPERATION_TIME_TO_FIRST_CHUNK, {
          description: 'Time to receive the first chunk of a streamed response.',
          unit: 's',
          advice: { explicitBucketBoundaries: [...DURATION_BUCKETS] },
        })
      : undefined;
    this.now = options.now ?? (() => performance.now());
  }

  /**
   * Starts an attempt's span (a child of the active context) and its clock.
   *
   * @example
   * ```ts
   * const handle = telemetry.startAttempt({ provider: 'openai', baseURL: undefined,
   *   deployment: 'openai', model: 'gpt-4o-mini', attempt: 2, failoverReason: 'rate_limit' });
   * ```
   */
  startAttempt(info: GenAiAttemptInfo): GenAiAttempt {
    if (this.idle()) return NOTHING;
    // Parsed once per endpoint: URL parsing would cost more than the rest of the span.
    const key = `${info.provider} ${info.baseURL ?? ''}`;
    let endpoint = this.endpoints.get(key);
    if (endpoint === undefined) {
      endpoint = {
        [GEN_AI.PROVIDER_NAME]: providerName(info.provider, info.baseURL),
        ...serverAttributes(info.provider, info.baseURL),
      };
      this.endpoints.set(key, endpoint);
    }
    const operation = info.operation ?? GEN_AI_VALUES.OPERATION_CHAT;
    const common: Attributes = {
      [GEN_AI.OPERATION_NAME]: operation,
      [GEN_AI.REQUEST_MODEL]: info.model,
      ...endpoint,
    };
    const attributes: Attributes = {
      ...common,
      'switchboard.deployment': info.deployment,
      'switchboard.attempt': info.attempt,
    };
    if (info.failoverReason !== undefined) {
      attributes['switchboard.failover.reason'] = info.failoverReason;
    }
    const body = info.body;
    const maxTokens = body?.max_completion_tokens ?? body?.max_tokens;
    if (typeof maxTokens === 'number') attributes[GEN_AI.REQUEST_MAX_TOKENS] = maxTokens;
    const stream = body?.stream === true;
    if (this.latest) attributes[GEN_AI_LATEST.REQUEST_STREAM] = stream;
    if (this.content && body !== undefined) {
      attributes[GEN_AI.INPUT_MESSAGES] = JSON.stringify(body.messages ?? []);
    }
    const span = this.tracer.startSpan(`${operation} ${info.model}`, {
      kind: SpanKind.CLIENT,
      attributes,
    });
    return new Attempt(this, span, common, info.provider, this.now());
  }

  /**
   * {@link startAttempt} for an attempt on one of the switchboard's deployments.
   *
   * @example
   * ```ts
   * const trace = telemetry.forDeployment(deployment, 'gpt-4o-mini', body, { attempt: 1 });
   * ```
   */
  forDeployment(
    deployment: { readonly name: string; readonly provider: 'openai' | 'anthropic' },
    model: string,
    body: Readonly<Record<string, unknown>>,
    context: AttemptContext,
    operation?: GenAiOperationName,
  ): GenAiAttempt {
    if (this.idle()) return NOTHING;
    let baseURL = this.baseURLs.get(deployment.name);
    if (baseURL === undefined) {
      // The SDK client's own base URL: what it really calls (the default when none was given).
      const client = (deployment as { client?: { baseURL?: unknown } }).client;
      baseURL = typeof client?.baseURL === 'string' ? client.baseURL : '';
      this.baseURLs.set(deployment.name, baseURL);
    }
    return this.startAttempt({
      provider: deployment.provider,
      baseURL: baseURL === '' ? undefined : baseURL,
      deployment: deployment.name,
      model,
      attempt: context.attempt,
      failoverReason: context.failoverReason,
      body,
      operation,
    });
  }

  /**
   * Without an OpenTelemetry SDK there is nothing to build: attributes and spans would cost a
   * few µs per call for no one.
   */
  private idle(): boolean {
    return !this.measured && this.proxy?.getDelegate() === NO_TRACER_PROVIDER;
  }

  /** @internal */
  finish(span: Span, common: Attributes, started: number, outcome: AttemptOutcome): void {
    const end = this.now();
    const metricAttributes: Attributes = { ...common };
    if (outcome.responseModel !== undefined) {
      span.setAttribute(GEN_AI.RESPONSE_MODEL, outcome.responseModel);
      metricAttributes[GEN_AI.RESPONSE_MODEL] = outcome.responseModel;
    }
    if (outcome.errorType !== undefined) metricAttributes[GEN_AI.ERROR_TYPE] = outcome.errorType;
    const usage = outcome.usage;
    if (usage !== undefined) {
      setIfNumber(span, GEN_AI.USAGE_INPUT_TOKENS, usage.inputTokens);
      setIfNumber(span, GEN_AI.USAGE_OUTPUT_TOKENS, usage.outputTokens);
      setIfNumber(span, GEN_AI.USAGE_CACHE_READ_INPUT_TOKENS, usage.cacheReadInputTokens);
      setIfNumber(span, GEN_AI.USAGE_CACHE_CREATION_INPUT_TOKENS, usage.cacheCreationInputTokens);
      if (usage.inputTokens !== undefined) {
        this.tokens.record(usage.inputTokens, {
          ...metricAttributes,
          [GEN_AI.TOKEN_TYPE]: GEN_AI_VALUES.TOKEN_INPUT,
        });
      }
      if (usage.outputTokens !== undefined) {
        this.tokens.record(usage.outputTokens, {
          ...metricAttributes,
          [GEN_AI.TOKEN_TYPE]: GEN_AI_VALUES.TOKEN_OUTPUT,
        });
      }
    }
    if (this.content && outcome.output !== undefined) {
      span.setAttribute(GEN_AI.OUTPUT_MESSAGES, JSON.stringify(outcome.output));
    }
    if (outcome.firstChunkAt !== undefined && this.firstChunk !== undefined) {
      const seconds = Math.max(0, outcome.firstChunkAt - started) / 1000;
      span.setAttribute(GEN_AI_LATEST.RESPONSE_TIME_TO_FIRST_CHUNK, seconds);
      this.firstChunk.record(seconds, metricAttributes);
    }
    this.duration.record(Math.max(0, end - started) / 1000, metricAttributes);
    span.end();
  }

  /** @internal */
  clock(): number {
    return this.now();
  }
}

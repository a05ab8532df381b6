import { SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import { scrub, STACK_LIMIT } from '../errors/scrub';
import { GEN_AI } from './gen-ai-conventions';
import { errorTypeOf, finishReasons, usageOf, type GenAiUsage } from './gen-ai-attributes';

/** The span attribute of what an attempt cost, in USD (with `pricing`). */
const COST_ATTRIBUTE = 'switchboard.cost_usd';

/**
 * One attempt's span and measurements; every method after the first `succeeded` / `failed` is a
 * no-op.
 *
 * @example
 * ```ts
 * const handle = telemetry.startAttempt(info);
 * try {
 *   const completion = await client.chat.completions.create(body);
 *   handle.response(completion);
 * } catch (error) {
 *   handle.failed(error, 'rate_limit');
 * }
 * ```
 */
export interface GenAiAttempt {
  /** A non-streamed answer: takes its usage, model, id and finish reasons, and ends the span. */
  response(result: unknown): void;
  /** One stream event: the first marks the time to first chunk; usage and model accumulate. */
  event(event: unknown): void;
  /** The stream ended normally: ends the span with what the events reported. */
  streamEnded(): void;
  /** Ends the span as a success with this usage and response model. */
  succeeded(usage?: GenAiUsage, responseModel?: string): void;
  /** Ends the span as a failure: `error.type`, the switchboard's reason, the exception. */
  failed(error: unknown, reason: string): void;
  /** What the attempt cost (USD, from the answer's usage and the model's price), before it ends. */
  cost(usd: number): void;
}

/**
 * How an attempt ended, for the span and the histograms.
 *
 * @example
 * ```ts
 * const outcome: AttemptOutcome = { usage: { inputTokens: 12, outputTokens: 3 }, responseModel: 'gpt-4o-mini' };
 * ```
 */
export interface AttemptOutcome {
  usage?: GenAiUsage;
  responseModel?: string;
  errorType?: string;
  firstChunkAt?: number;
  output?: unknown;
}

/**
 * Where an attempt reports its end: the telemetry that started it.
 *
 * @example
 * ```ts
 * const sink: AttemptSink = { clock: () => performance.now(), finish: (span) => span.end() };
 * ```
 */
interface AttemptSink {
  finish(span: Span, common: Attributes, started: number, outcome: AttemptOutcome): void;
  clock(): number;
}

/** @internal An attempt with a span: collects what the answer or the stream reports. */
export class Attempt implements GenAiAttempt {
  private done = false;
  private firstChunkAt: number | undefined;
  private readonly usage: GenAiUsage = {};
  private responseModel: string | undefined;

  constructor(
    private readonly telemetry: AttemptSink,
    private readonly span: Span,
    private readonly common: Attributes,
    private readonly provider: 'openai' | 'anthropic',
    private readonly started: number,
  ) {}

  response(result: unknown): void {
    if (this.done) return;
    const r = (result ?? {}) as Record<string, unknown>;
    if (typeof r.id === 'string') this.span.setAttribute(GEN_AI.RESPONSE_ID, r.id);
    const reasons = finishReasons(this.provider, r);
    if (reasons.length > 0) this.span.setAttribute(GEN_AI.RESPONSE_FINISH_REASONS, reasons);
    const output = this.provider === 'openai' ? r.choices : r.content;
    this.end({
      usage: usageOf(this.provider, r.usage),
      responseModel: typeof r.model === 'string' ? r.model : undefined,
      output,
    });
  }

  event(event: unknown): void {
    if (this.done) return;
    this.firstChunkAt ??= this.telemetry.clock();
    const e = (event ?? {}) as Record<string, unknown>;
    if (this.provider === 'openai') {
      if (typeof e.model === 'string') this.responseModel = e.model;
      if (typeof e.id === 'string') this.span.setAttribute(GEN_AI.RESPONSE_ID, e.id);
      const reasons = finishReasons('openai', e);
      if (reasons.length > 0) this.span.setAttribute(GEN_AI.RESPONSE_FINISH_REASONS, reasons);
      if (e.usage) Object.assign(this.usage, usageOf('openai', e.usage));
      return;
    }
    if (e.type === 'message_start') {
      const message = (e.message ?? {}) as Record<string, unknown>;
      if (typeof message.model === 'string') this.responseModel = message.model;
      if (typeof message.id === 'string') this.span.setAttribute(GEN_AI.RESPONSE_ID, message.id);
      Object.assign(this.usage, usageOf('anthropic', message.usage));
    } else if (e.type === 'message_delta') {
      // Cumulative counts: the last one wins. Input counts appear only when the API sends them.
      Object.assign(this.usage, usageOf('anthropic', e.usage));
      const stop = (e.delta as { stop_reason?: unknown } | undefined)?.stop_reason;
      if (typeof stop === 'string') this.span.setAttribute(GEN_AI.RESPONSE_FINISH_REASONS, [stop]);
    }
  }

  streamEnded(): void {
    this.end({
      usage: Object.keys(this.usage).length > 0 ? this.usage : undefined,
      responseModel: this.responseModel,
    });
  }

  succeeded(usage?: GenAiUsage, responseModel?: string): void {
    this.end({ usage, responseModel });
  }

  cost(usd: number): void {
    if (!this.done) this.span.setAttribute(COST_ATTRIBUTE, usd);
  }

  failed(error: unknown, reason: string): void {
    if (this.done) return;
    const errorType = errorTypeOf(error);
    this.span.setAttribute(GEN_AI.ERROR_TYPE, errorType);
    this.span.setAttribute('switchboard.failure.reason', reason);
    // An upstream's error text may echo the request's headers or name the key it refused: the
    // span (and whatever collector it is exported to) gets it scrubbed.
    const message = scrub(error instanceof Error ? error.message : error);
    if (error instanceof Error) {
      this.span.recordException({
        name: error.name,
        message,
        stack: error.stack === undefined ? undefined : scrub(error.stack, STACK_LIMIT),
      });
    }
    this.span.setStatus({ code: SpanStatusCode.ERROR, message });
    this.end({
      errorType,
      responseModel: this.responseModel,
      usage: Object.keys(this.usage).length > 0 ? this.usage : undefined,
    });
  }

  private end(outcome: AttemptOutcome): void {
    if (this.done) return;
    this.done = true;
    this.telemetry.finish(this.span, this.common, this.started, {
      ...outcome,
      firstChunkAt: this.firstChunkAt,
    });
  }
}

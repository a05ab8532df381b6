import type { SwitchboardLogger } from '../types';
import type { PreparedRequest } from '../providers/attempt-types';
import { outputCap } from '../providers/text-length';
import type { Deployment } from '../registry/deployment';
import { usageOf, type GenAiUsage } from '../telemetry/gen-ai-attributes';
import type { AttemptTrace, RecordedCall } from '../telemetry/gen-ai-telemetry';
import type { TrafficLine } from './traffic-line';
import { TrafficLog } from './traffic-log';

/**
 * Writes `recordTraffic`: one {@link TrafficLine} per finished call. The attempt that answers
 * writes the line when its answer (or its stream) is complete, with the usage the upstream
 * reported; an attempt that fails writes nothing, as failover may follow, and a call that fails
 * for its caller is written by its dispatch ({@link failed}). Only token counts, sizes and names
 * are read: the request and the answer's content never reach the file.
 *
 * @example
 * ```ts
 * const recorder = new TrafficRecorder('traffic.jsonl', logger, Date.now);
 * hooks.started = (d, state, request, context) => recorder.attempt(d, state.name, request, context.call);
 * await recorder.close();
 * ```
 */
export class TrafficRecorder {
  private readonly log: TrafficLog;

  constructor(
    path: string,
    logger: SwitchboardLogger,
    readonly clock: () => number,
  ) {
    this.log = new TrafficLog(path, logger);
  }

  /** The trace of one metered attempt of `call` (none for calls that use no quota). */
  attempt(
    deployment: Deployment,
    model: string,
    request: PreparedRequest,
    call: RecordedCall | undefined,
  ): AttemptTrace | undefined {
    if (call === undefined || !request.metered) return undefined;
    return new RecordedAttempt(this, deployment, model, request, call);
  }

  /** A call that failed for its caller, after its last attempt on `deployment` (if any). */
  failed(
    model: string,
    request: PreparedRequest,
    call: RecordedCall | undefined,
    deployment: Deployment | undefined,
    error: unknown,
  ): void {
    if (call === undefined || !request.metered) return;
    const status = (error as { status?: unknown } | null)?.status;
    this.write(call, model, deployment, request, {
      input: request.admission.input,
      output: 0,
      status: typeof status === 'number' ? status : 0,
    });
  }

  /** @internal */
  write(
    call: RecordedCall,
    model: string,
    deployment: Deployment | undefined,
    request: PreparedRequest,
    o: { input: number; cached?: number; output: number; status: number; latency?: number },
  ): void {
    const line: TrafficLine = {
      t: call.t,
      model,
      deployment: deployment?.name,
      input_tokens: o.input,
      cached_tokens: o.cached,
      output_tokens: o.output,
      max_tokens: outputCap(request.body),
      lane: call.lane,
      tenant: call.tenant === '' ? undefined : call.tenant,
      status: o.status,
      latency_ms: o.latency,
    };
    this.log.write(JSON.stringify(line));
  }

  /** Writes every buffered line; idempotent. */
  close(): Promise<void> {
    return this.log.close();
  }
}

/** One attempt: writes its call's line once its answer or its stream is complete. */
class RecordedAttempt implements AttemptTrace {
  private readonly startedAt: number;
  private usage: GenAiUsage | undefined;
  private events = 0;
  private done = false;

  constructor(
    private readonly recorder: TrafficRecorder,
    private readonly deployment: Deployment,
    private readonly model: string,
    private readonly request: PreparedRequest,
    private readonly call: RecordedCall,
  ) {
    this.startedAt = recorder.clock();
  }

  response(result: unknown): void {
    this.usage = usageOf(this.deployment.provider, (result as { usage?: unknown } | null)?.usage);
    this.end(200);
  }

  event(event: unknown): void {
    this.events++;
    const e = event as { usage?: unknown; message?: { usage?: unknown } } | null;
    const raw = e?.usage ?? e?.message?.usage;
    // Running totals: what the latest event reports wins, field by field.
    const now = usageOf(this.deployment.provider, raw);
    if (now !== undefined) this.usage = { ...this.usage, ...now };
  }

  streamEnded(): void {
    this.end(200);
  }

  /** Money is not in the record: the plan prices nothing. */
  cost(): void {}

  failed(error: unknown): void {
    // Before any event, the dispatch has the call (failover, or its caller's error); a stream
    // that broke off later was answered, and is written with what it reported.
    if (this.events === 0) return;
    const status = (error as { status?: unknown } | null)?.status;
    this.end(typeof status === 'number' ? status : 0);
  }

  private end(status: number): void {
    if (this.done) return;
    this.done = true;
    const usage = this.usage;
    this.recorder.write(this.call, this.model, this.deployment, this.request, {
      input: usage?.inputTokens ?? 0,
      cached: usage?.cacheReadInputTokens,
      output: usage?.outputTokens ?? 0,
      status,
      latency: Math.max(0, this.recorder.clock() - this.startedAt),
    });
  }
}

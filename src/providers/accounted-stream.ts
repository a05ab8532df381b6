import type { Deployment } from '../registry/deployment';
import type { ModelState } from '../registry/model-state';
import type { TokenUsage as Usage } from '../quota/admission';
import type { AttemptTrace } from '../telemetry/gen-ai-telemetry';
import type { ApiAdapter } from './adapter';
import type { PreparedRequest } from './attempt-types';

/** The attempt a stream belongs to, as its accounting sees it. */
export interface StreamingAttempt {
  readonly deployment: Deployment;
  readonly state: ModelState;
  readonly adapter: ApiAdapter;
  readonly request: PreparedRequest;
  readonly caller: AbortSignal | undefined;
  readonly trace: AttemptTrace | undefined;
  /** When it was sent (epoch ms). */
  readonly startedAt: number;
  /** Account a failure (what the stream reported so far stands) and turn it into the caller's error. */
  fail(error: unknown, produced: Usage | undefined): Error;
  /** The attempt is over: its deadline and listener go, its slot in flight is freed (once). */
  release(): void;
  /** The call's account takes the usage the stream reported (with `tenants` or `pricing`). */
  costs(usage: Usage | undefined): void;
}

/**
 * Wraps the SDK's stream in the SDK's own `Stream` class: the admission charge stands until the
 * stream ends and is then settled to the usage its events reported; usage-only events the caller
 * did not ask for are hidden, and a dropped connection marks the model down and reaches the
 * consumer as `APIConnectionError`. The first event gives the model's time to first token; the
 * call holds its slot in flight until the stream ends, breaks off, or is aborted.
 */
export function accountedStream(run: StreamingAttempt, source: unknown): unknown {
  const { deployment, state, adapter, request, caller, trace } = run;
  const stream = source as AsyncIterable<unknown> & { controller: AbortController };
  const streamUsage = request.metered ? adapter.streamUsage : undefined;
  const track = request.track;
  const memo: Usage = { input: 0, output: 0 };
  // The usage reported so far (events carry running totals).
  let used: Usage | undefined;
  let settled = !request.metered;
  let first = true;
  // A stream aborted before anyone reads it ends here too.
  stream.controller?.signal.addEventListener('abort', () => run.release(), { once: true });
  async function* iterate(): AsyncGenerator<unknown> {
    try {
      for await (const event of stream) {
        if (first) {
          first = false;
          state.latency.firstEvent(run.startedAt);
        }
        if (streamUsage) {
          const usage = streamUsage.call(adapter, event, memo);
          if (usage !== undefined) used = { ...usage };
        }
        trace?.event(event);
        track?.seen(event, request.body, deployment, adapter);
        if (request.hideUsageEvents && adapter.isUsageEvent?.(event)) continue;
        yield event;
      }
      if (!settled) {
        settled = true;
        state.settle(request.admission, used);
        if (request.account !== undefined) run.costs(used);
      }
      if (!caller?.aborted) state.recordSuccess();
    } catch (error) {
      // Tokens already streamed were spent upstream: keep them charged.
      settled = true;
      throw run.fail(error, used);
    } finally {
      // A consumer that stopped reading early: what was reported so far stands.
      if (!settled) {
        settled = true;
        state.settle(request.admission, used);
        if (request.account !== undefined) run.costs(used);
      }
      run.release();
      // Ended by the source, or by a consumer that stopped reading: a success either way.
      trace?.streamEnded();
    }
  }
  return deployment.makeStream(() => iterate(), stream.controller);
}

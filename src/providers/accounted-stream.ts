import type { Deployment } from '../registry/deployment';
import type { ModelState } from '../registry/model-state';
import type { TokenUsage as Usage } from '../quota/admission';
import type { DeadlineEntry, DeadlineList } from '../runtime/deadlines';
import type { AttemptTrace } from '../telemetry/gen-ai-telemetry';
import type { ApiAdapter } from './adapter';
import type { AttemptHooks, PreparedRequest } from './attempt-types';
import { checkedUsage, costUsage } from './attempt-usage';

/** The attempt a stream belongs to, as its accounting sees it. */
interface StreamingAttempt {
  readonly deployment: Deployment;
  readonly modelState: ModelState;
  readonly adapter: ApiAdapter;
  readonly request: PreparedRequest;
  readonly caller: AbortSignal | undefined;
  readonly trace: AttemptTrace | undefined;
  /** When it was sent (epoch ms). */
  readonly startedAt: number;
  /**
   * Where its deadlines wait, the switchboard's `streamIdleTimeout`, and where a fault in the
   * usage the stream reported is told (`checkedUsage`).
   */
  readonly hooks: Pick<AttemptHooks, 'deadlines' | 'streamIdleTimeout' | 'faultyUsage'>;
  /** Account a failure (what the stream reported so far stands) and turn it into the caller's error. */
  fail(error: unknown, produced: Usage | undefined): Error;
  /** The attempt is over: its deadline and listener go, its slot in flight is freed (once). */
  release(): void;
}

/**
 * A stream already read up to its first event (under a first-token deadline): its iterator, taken
 * once, and that event, which the caller still gets first.
 *
 * @example
 * ```ts
 * const start: StreamStart = { iterator, first: await iterator.next() };
 * ```
 */
export interface StreamStart {
  iterator: AsyncIterator<unknown>;
  first: IteratorResult<unknown>;
}

/**
 * Wraps the SDK's stream in the SDK's own `Stream` class: the admission charge stands until the
 * stream ends and is then settled to the usage its events reported; usage-only events the caller
 * did not ask for are hidden, and a dropped connection marks the model down and reaches the
 * consumer as `APIConnectionError`. The first event gives the model's time to first token; the
 * call holds its slot in flight until the stream ends, breaks off, or is aborted. Once output has
 * begun, a `streamIdleTimeout` bounds each wait for the next event: past it the upstream's
 * connection is closed and the consumer's iteration throws the SDK's `APIConnectionTimeoutError`.
 */
export function accountedStream(
  run: StreamingAttempt,
  source: unknown,
  start?: StreamStart,
): unknown {
  const { deployment, modelState: state, adapter, request, caller, trace } = run;
  const stream = source as AsyncIterable<unknown> & { controller: AbortController };
  const streamUsage = request.metered ? adapter.streamUsage : undefined;
  const track = request.track;
  const memo: Usage = { input: 0, output: 0 };
  // The usage reported so far (events carry running totals).
  let used: Usage | undefined;
  let settled = !request.metered;
  // A stream read up to its first event had its time to first token taken then.
  let first = start === undefined;
  // ms the stream may pause between events once output began (0: for ever).
  const idleMs = state.streamIdleTimeout || run.hooks.streamIdleTimeout || 0;
  const idle = idleMs > 0 ? new IdleDeadline(run, idleMs, stream.controller) : undefined;
  // A stream aborted before anyone reads it ends here too.
  stream.controller?.signal.addEventListener('abort', () => run.release(), { once: true });
  async function* iterate(): AsyncGenerator<unknown> {
    const iterator = start?.iterator ?? stream[Symbol.asyncIterator]();
    let pending = start?.first;
    let finished = false;
    try {
      for (;;) {
        let next: IteratorResult<unknown>;
        if (pending !== undefined) {
          next = pending;
          pending = undefined;
        } else if (idle === undefined || first) next = await iterator.next();
        else next = await idle.next(iterator);
        if (next.done) {
          finished = true;
          break;
        }
        const event = next.value;
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
      track?.ended?.();
      if (!settled) {
        settled = true;
        const usage = checkedUsage(run, used);
        state.settle(request.admission, usage);
        if (request.account !== undefined) costUsage(run, usage);
      }
      if (!caller?.aborted) state.recordSuccess();
    } catch (error) {
      // Tokens already streamed were spent upstream: keep them charged.
      settled = true;
      throw run.fail(error, used);
    } finally {
      // A consumer that stopped reading early: the upstream's stream is closed, as a `for await`
      // over it would, and what was reported so far stands.
      if (!finished) await closeQuietly(iterator);
      if (!settled) {
        settled = true;
        const usage = checkedUsage(run, used);
        state.settle(request.admission, usage);
        if (request.account !== undefined) costUsage(run, usage);
      }
      run.release();
      // Ended by the source, or by a consumer that stopped reading: a success either way.
      trace?.streamEnded();
    }
  }
  return deployment.makeStream(() => iterate(), stream.controller);
}

async function closeQuietly(iterator: AsyncIterator<unknown>): Promise<void> {
  try {
    await iterator.return?.();
  } catch {
    // Closing a stream that already broke: its error was not the consumer's to hear.
  }
}

/**
 * The deadline of one wait for a stream's next event, in the switchboard's shared
 * {@link Deadlines}: armed while the wait lasts, and when it passes the stream's connection is
 * closed and the wait throws.
 */
class IdleDeadline implements DeadlineEntry {
  deadlineList: DeadlineList | undefined = undefined;
  deadlineAt = 0;
  deadlinePrev: DeadlineEntry | undefined = undefined;
  deadlineNext: DeadlineEntry | undefined = undefined;
  private expired = false;

  constructor(
    private readonly run: StreamingAttempt,
    private readonly ms: number,
    private readonly controller: AbortController | undefined,
  ) {}

  expire(): void {
    this.expired = true;
    this.controller?.abort();
  }

  async next(iterator: AsyncIterator<unknown>): Promise<IteratorResult<unknown>> {
    const deadlines = this.run.hooks.deadlines;
    deadlines.add(this, this.ms);
    let result: IteratorResult<unknown> | undefined;
    try {
      result = await iterator.next();
    } catch (error) {
      // Closing the connection ends a stream with an abort error, or quietly: either way it
      // is the pause the consumer hears of.
      if (!this.expired) throw error;
    } finally {
      deadlines.remove(this);
    }
    if (this.expired) {
      const { deployment } = this.run;
      throw new deployment.errors.APIConnectionTimeoutError({
        message: `Deployment ${deployment.name} sent no stream event for ${this.ms} ms (streamIdleTimeout); the stream is closed and not sent again, as part of it was delivered.`,
      });
    }
    return result!;
  }
}

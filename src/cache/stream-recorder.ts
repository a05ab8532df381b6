import type { ApiAdapter } from '../providers/adapter';
import type { PreparedRequest, ResponseTracker } from '../providers/attempt-types';
import type { Deployment } from '../registry/deployment';
import type { TokenUsage } from '../types';
import { StreamVerdict, answerVerdict, type Verdict } from './answer-verdict';
import { MAX_SHARED_ENTRY, type EntryKind } from './cache-entry';

const decoder = new TextDecoder();

/**
 * What a {@link Recorder} hands its cache when the answer it watched is whole: where it was made
 * and what it is.
 *
 * @example
 * ```ts
 * const made: Recorded = { deployment, verdict, usage, body: '{"id":"chatcmpl-1"}' };
 * ```
 */
export interface Recorded {
  deployment: Deployment;
  verdict: Verdict;
  usage: TokenUsage | undefined;
  body?: string;
  events?: string[];
}

/**
 * Watches the attempt that succeeded, as the request's tracker (the one it had still told
 * first): a whole answer is copied to JSON text at once, before its caller can change it; a
 * stream's events are copied as each is read, before the SDK's helpers (`responses.stream()`,
 * `messages.stream()`) mutate them into their snapshots, the usage-only events the caller does not
 * see left out. When the stream ended normally (`ended`), or the answer came, the cache is
 * handed the copy; a stream broken off, or a call that moved to another model, hands nothing.
 *
 * @example
 * ```ts
 * const request = { ...prepared, track: new Recorder(setup, prepared, (made) => keep(made)) };
 * ```
 */
export class Recorder implements ResponseTracker {
  private readonly verdict: StreamVerdict | undefined;
  private readonly events: string[] = [];
  private readonly memo: TokenUsage = { input: 0, output: 0 };
  private usage: TokenUsage | undefined;
  private deployment: Deployment | undefined;
  private size = 0;
  private dropped = false;

  constructor(
    private readonly setup: {
      api: string;
      model: string;
      kind: EntryKind;
      /** The bytes an event of `sb.fetch`'s stream came in. */
      bytesOf: (event: unknown) => Uint8Array | undefined;
    },
    private readonly request: PreparedRequest,
    private readonly keep: (made: Recorded) => void,
  ) {
    this.verdict = setup.kind === 'json' ? undefined : new StreamVerdict(setup.api);
  }

  seen(
    value: unknown,
    body: Record<string, unknown>,
    deployment: Deployment,
    adapter: ApiAdapter,
  ): void {
    this.request.track?.seen(value, body, deployment, adapter);
    if (this.dropped) return;
    // A fallback model answered: not the answer of the call's own key.
    if (body.model !== this.setup.model) {
      this.dropped = true;
      return;
    }
    this.deployment = deployment;
    if (this.verdict === undefined) {
      const text = JSON.stringify(value);
      this.dropped = true;
      if (text.length > MAX_SHARED_ENTRY) return;
      this.keep({
        deployment,
        verdict: answerVerdict(this.setup.api, value),
        usage: adapter.usage(value),
        body: text,
      });
      return;
    }
    const usage = adapter.streamUsage?.(value, this.memo);
    if (usage !== undefined) this.usage = { ...usage };
    if (this.request.hideUsageEvents && adapter.isUsageEvent?.(value)) return;
    this.verdict.see(value);
    let text: string | undefined;
    if (this.setup.kind === 'sse') {
      const bytes = this.setup.bytesOf(value);
      text = bytes === undefined ? undefined : decoder.decode(bytes);
    } else text = JSON.stringify(value);
    this.size += text?.length ?? 0;
    if (text === undefined || this.size > MAX_SHARED_ENTRY) {
      this.dropped = true;
      this.events.length = 0;
      return;
    }
    this.events.push(text);
  }

  /** The stream ended normally: every event reached its consumer. */
  ended(): void {
    if (this.dropped || this.deployment === undefined || this.verdict === undefined) return;
    this.dropped = true;
    this.keep({
      deployment: this.deployment,
      verdict: this.verdict.verdict(),
      usage: this.usage,
      events: this.events,
    });
  }
}

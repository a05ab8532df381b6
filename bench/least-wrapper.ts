/**
 * The least a wrapper of an SDK call can allocate while it keeps what a switchboard's caller is
 * promised: its own promise of the SDK's `APIPromise` kind (so that the answer may come from any
 * attempt), one object of state for the call, the two handlers of the SDK's promises bound to it,
 * and the wait for the response's head before its data (the headers a quota anchors on). It picks
 * its client round-robin and does nothing else: no routing, no charge, no failover, no deadline.
 *
 * Section 2b runs it beside the switchboard and plain SDK calls, so that a target on the bytes a
 * call allocates above a direct call can be read against the least any such wrapper costs. Each
 * further field of a call's state adds 8 bytes (Node's V8 keeps no compressed pointers).
 *
 * @example
 * ```ts
 * const send = leastWrapper(clients, params);
 * const completion = await send(0);
 * ```
 */
import type OpenAI from 'openai';
import { APIPromise } from 'openai/core/api-promise';

type Params = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;

/** The SDK's promise, with the field that holds the promise of its response's head. */
interface SentRequest extends PromiseLike<unknown> {
  responsePromise: Promise<{ response: Response }>;
}

/** One call's state: what it must hold to settle its caller's promise from its answer. */
class LeastCall {
  resolve: (value: unknown) => void = noop;
  reject: (error: unknown) => void = noop;
  sent: SentRequest | undefined = undefined;
  response: Response | undefined = undefined;
  private headCame = false;
  private readonly onValue = this.value.bind(this);
  private readonly onFailure = this.failure.bind(this);

  constructor(
    private readonly client: OpenAI,
    private readonly params: Params,
  ) {}

  start(): void {
    const sent = this.client.chat.completions.create(this.params) as unknown as SentRequest;
    this.sent = sent;
    sent.responsePromise.then(this.onValue, this.onFailure);
  }

  /** The head, then the data. */
  private value(value: unknown): void {
    if (!this.headCame) {
      this.headCame = true;
      this.response = (value as { response: Response }).response;
      this.sent!.then(this.onValue, this.onFailure);
      return;
    }
    this.resolve(value);
  }

  private failure(error: unknown): void {
    this.reject(error);
  }
}

function noop(): void {}

/** The call whose promise is being made: an executor runs at once. */
let opening: LeastCall | undefined;

/** The caller's promise, of the SDK's kind; `await` gives the data. */
class LeastPromise extends Promise<unknown> {
  static override get [Symbol.species](): PromiseConstructor {
    return Promise;
  }

  readonly call: LeastCall;

  constructor() {
    super(settles);
    this.call = opening!;
  }
}
Object.setPrototypeOf(LeastPromise.prototype, APIPromise.prototype);
Object.defineProperty(LeastPromise.prototype, 'then', { value: Promise.prototype.then });

function settles(resolve: (value: unknown) => void, reject: (error: unknown) => void): void {
  opening!.resolve = resolve;
  opening!.reject = reject;
}

/** A sender of call `i` through the least wrapper over `clients`. */
export function leastWrapper(
  clients: readonly OpenAI[],
  params: (i: number) => Params,
): (i: number) => Promise<unknown> {
  return (i) => {
    const call = new LeastCall(clients[i % clients.length]!, params(i));
    opening = call;
    const promise = new LeastPromise();
    opening = undefined;
    call.start();
    return promise;
  };
}

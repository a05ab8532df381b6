import OpenAI from 'openai';
import type { ApiAdapter, ApiOperation, ApiPromiseLike } from '../../src/providers/adapter';
import { runAttempt } from '../../src/providers/attempt';
import type { AttemptHooks, PreparedRequest } from '../../src/providers/attempt-types';
import {
  Deployment,
  type ProviderErrors,
  type SdkRequestOptions,
} from '../../src/registry/deployment';
import { ModelState } from '../../src/registry/model-state';
import { Deadlines } from '../../src/runtime/deadlines';
import type { FailureReason } from 'nestjs-switchboard/extend';

const MODEL = 'gpt-4o-mini';
const ERRORS: ProviderErrors = {
  APIError: OpenAI.APIError,
  APIConnectionError: OpenAI.APIConnectionError,
  APIConnectionTimeoutError: OpenAI.APIConnectionTimeoutError,
  APIUserAbortError: OpenAI.APIUserAbortError,
  RateLimitError: OpenAI.RateLimitError,
};

interface Sent {
  options: SdkRequestOptions;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * A deployment whose sends the test settles by hand: no SDK, no sockets, so the attempt's own
 * timers are the only ones and fake timers drive them exactly. Like the SDK, a send rejects with
 * the abort error when its signal aborts.
 */
class HandDeployment extends Deployment {
  readonly provider = 'openai' as const;
  readonly errors = ERRORS;
  readonly sent: Sent[] = [];
  /** The adapter's operation gets this as its client. */
  readonly client: HandDeployment = this;

  constructor(timeout: number) {
    const models = new Map([[MODEL, new ModelState({ name: MODEL }, 'hand', () => 0)]]);
    super({ name: 'hand', timeout }, models);
  }

  get state(): ModelState {
    return this.models.get(MODEL)!;
  }

  makeStream(): unknown {
    throw new Error('not streamed here');
  }
}

/**
 * What the SDK's `APIPromise` gives the switchboard, settled by hand: the response once the test
 * settles the send, the data after it.
 */
function handPromise(
  settle: (resolve: (data: unknown) => void, reject: (e: unknown) => void) => void,
) {
  const data = new Promise<unknown>(settle);
  const sent: ApiPromiseLike<unknown> = {
    asResponse: () => data.then(() => new Response('{}')),
    then: (onData, onError) => data.then(onData, onError),
  };
  return sent;
}

/** The one operation of the hand adapter: a send the test settles. */
const SEND: ApiOperation = {
  send: (client, _body, options) =>
    handPromise((resolve, reject) => {
      (client as HandDeployment).sent.push({ options: options!, resolve, reject });
      options?.signal?.addEventListener('abort', () => reject(new OpenAI.APIUserAbortError()));
    }),
};

const ADAPTER: ApiAdapter = {
  name: 'hand',
  path: ['hand'],
  provider: 'openai',
  operations: { create: SEND },
  admission: () => ({ input: 10, output: 0 }),
  usage: (data) => {
    const total = (data as { usage?: { total_tokens: number } }).usage?.total_tokens;
    return total === undefined ? undefined : { input: total, output: 0 };
  },
  facade: () => ({}),
};

const request = (): PreparedRequest => ({
  body: { model: MODEL },
  stream: false,
  admission: { input: 10, output: 0 },
  metered: true,
  hideUsageEvents: false,
});

function hooks() {
  const failed: FailureReason[] = [];
  const staleResends: number[] = [];
  const h: AttemptHooks = {
    sent: () => undefined,
    failed: (_state, reason) => failed.push(reason),
    staleSocketRetried: () => staleResends.push(1),
    observed: () => undefined,
    deadlines: new Deadlines(),
  };
  return { h, failed, staleResends };
}

/** How an attempt ended: its answer's data, or its error. */
type Outcome = { value: unknown; error?: undefined } | { error: unknown; value?: undefined };

// The attempt runs as a call's dispatch runs it: its outcome is heard directly, so a second
// settlement is counted rather than swallowed by a promise.
function start(d: HandDeployment, hs: AttemptHooks, options?: SdkRequestOptions) {
  let settlements = 0;
  let settle: (outcome: Outcome) => void = () => undefined;
  const outcome = new Promise<Outcome>((resolve) => (settle = resolve));
  const call = { adapter: ADAPTER, op: SEND, request: request(), options, context: { attempt: 1 } };
  runAttempt(call, d, d.state, hs, {
    resolve: (answer) => {
      settlements++;
      settle({ value: answer.data });
    },
    reject: (error) => {
      settlements++;
      settle({ error });
    },
  });
  return { outcome, settlements: () => settlements };
}

const staleSocket = () =>
  new OpenAI.APIConnectionError({
    cause: Object.assign(new TypeError('fetch failed'), {
      cause: { code: 'UND_ERR_SOCKET', message: 'other side closed', socket: { bytesRead: 300 } },
    }),
  });

describe('runAttempt() on fake timers', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => {
    jest.clearAllTimers();
    jest.useRealTimers();
  });

  it.each([
    ['without request options', undefined],
    ['with a caller signal', { signal: new AbortController().signal }],
  ])(
    'the deadline fires exactly once, %s: one timeout error, one failure, no timer left',
    async (_what, options) => {
      const d = new HandDeployment(1_000);
      const { h, failed } = hooks();
      const { outcome, settlements } = start(d, h, options);
      expect(jest.getTimerCount()).toBe(1);
      await jest.advanceTimersByTimeAsync(999);
      expect(settlements()).toBe(0);
      await jest.advanceTimersByTimeAsync(1);
      const result = await outcome;
      expect(result).toEqual({ error: expect.any(OpenAI.APIConnectionTimeoutError) });
      // A late answer changes nothing.
      d.sent[0]!.resolve({ usage: { total_tokens: 50 } });
      await jest.advanceTimersByTimeAsync(60_000);
      expect(settlements()).toBe(1);
      expect(failed).toEqual(['timeout']);
      expect(jest.getTimerCount()).toBe(0);
      expect(d.state.isCooling()).toBe(false); // timeouts never mark down
      expect(d.state.tpmUsage).toBe(0); // the estimate went back
      expect(d.state.rpmUsage).toBe(1);
    },
  );

  it('a call-level timeout replaces the deployment deadline', async () => {
    const d = new HandDeployment(30_000);
    const { h } = hooks();
    const { outcome, settlements } = start(d, h, { timeout: 200 });
    await jest.advanceTimersByTimeAsync(199);
    expect(settlements()).toBe(0);
    await jest.advanceTimersByTimeAsync(1);
    expect(await outcome).toEqual({ error: expect.any(OpenAI.APIConnectionTimeoutError) });
  });

  it('an answer before the deadline clears its timer and charges the real usage', async () => {
    const d = new HandDeployment(1_000);
    const { h, failed } = hooks();
    const { outcome } = start(d, h);
    await jest.advanceTimersByTimeAsync(500);
    d.sent[0]!.resolve({ usage: { total_tokens: 42 } });
    expect(await outcome).toEqual({ value: { usage: { total_tokens: 42 } } });
    expect(jest.getTimerCount()).toBe(0);
    expect(failed).toEqual([]);
    expect(d.state.tpmUsage).toBe(42);
  });

  it("a caller's abort rejects with the abort error, clears the deadline and marks nothing down", async () => {
    const d = new HandDeployment(1_000);
    const { h, failed } = hooks();
    const controller = new AbortController();
    const { outcome } = start(d, h, { signal: controller.signal });
    await jest.advanceTimersByTimeAsync(100);
    controller.abort();
    expect(await outcome).toEqual({ error: expect.any(OpenAI.APIUserAbortError) });
    expect(jest.getTimerCount()).toBe(0);
    expect(failed).toEqual(['aborted']);
    expect(d.state.isCooling()).toBe(false);
  });

  it('a stale pooled socket is sent once more at once: same deadline, no mark-down, no failure', async () => {
    const d = new HandDeployment(1_000);
    const { h, failed, staleResends } = hooks();
    const { outcome } = start(d, h);
    d.sent[0]!.reject(staleSocket());
    await jest.advanceTimersByTimeAsync(0);
    expect(d.sent).toHaveLength(2); // without waiting for any timer
    expect(staleResends).toHaveLength(1);
    expect(jest.getTimerCount()).toBe(1); // still the one deadline
    d.sent[1]!.resolve({ usage: { total_tokens: 12 } });
    expect(await outcome).toEqual({ value: { usage: { total_tokens: 12 } } });
    expect(failed).toEqual([]);
    expect(d.state.isCooling()).toBe(false);
    expect(d.state.rpmUsage).toBe(1); // one request charged, not two
  });

  it('a stale socket again on the resend follows the usual rules: marked down', async () => {
    const d = new HandDeployment(1_000);
    const { h, failed } = hooks();
    const { outcome } = start(d, h);
    d.sent[0]!.reject(staleSocket());
    await jest.advanceTimersByTimeAsync(0);
    d.sent[1]!.reject(staleSocket());
    expect(await outcome).toEqual({ error: expect.any(OpenAI.APIConnectionError) });
    expect(d.sent).toHaveLength(2);
    expect(failed).toEqual(['connection']);
    expect(d.state.isCooling()).toBe(true);
  });

  it('no resend once the deadline has passed', async () => {
    const d = new HandDeployment(1_000);
    const { h, staleResends } = hooks();
    const { outcome } = start(d, h, { signal: new AbortController().signal });
    await jest.advanceTimersByTimeAsync(1_000);
    d.sent[0]!.reject(staleSocket());
    expect(await outcome).toEqual({ error: expect.any(OpenAI.APIConnectionTimeoutError) });
    expect(d.sent).toHaveLength(1);
    expect(staleResends).toEqual([]);
  });
});

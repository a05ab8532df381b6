import OpenAI from 'openai';
import { failover, failoverPolicy } from '../../src/failover/failover';
import type { FailoverOptions } from 'nestjs-switchboard';
import type { ProviderErrors } from '../../src/registry/deployment';

const errors: ProviderErrors = {
  APIError: OpenAI.APIError,
  APIConnectionError: OpenAI.APIConnectionError,
  APIConnectionTimeoutError: OpenAI.APIConnectionTimeoutError,
  APIUserAbortError: OpenAI.APIUserAbortError,
  RateLimitError: OpenAI.RateLimitError,
};
const serverError = (n = 0) => new OpenAI.APIError(500, undefined, `500 #${n}`, new Headers());

/** Attempts that fail with a 500 until `succeedAt`, counting how often they were started. */
function attempts(succeedAt = Infinity) {
  const started: number[] = [];
  return {
    started,
    next: (attempt: number) => {
      started.push(attempt);
      return attempt >= succeedAt
        ? Promise.resolve(`ok at ${attempt}`)
        : Promise.reject(serverError(attempt));
    },
  };
}

function run(
  options: FailoverOptions,
  next: (attempt: number) => Promise<string>,
  signal?: AbortSignal,
) {
  const retries: Array<[number, number, string]> = [];
  const promise = failover(serverError(1), {
    next,
    policy: failoverPolicy(options),
    errors,
    signal,
    onRetry: (attempt, delay, reason) => retries.push([attempt, delay, reason]),
  });
  // Observe the outcome at once, so a rejection is never unhandled while timers are advanced.
  const outcome = promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  return { outcome, retries };
}

describe('failover() on fake timers', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => {
    jest.clearAllTimers();
    jest.useRealTimers();
  });

  it('waits for the delay with one timer, and starts the next attempt only when it fires', async () => {
    const a = attempts(3);
    const { outcome, retries } = run({ attempts: 3, delay: 1_000 }, a.next);
    expect(a.started).toEqual([]);
    expect(jest.getTimerCount()).toBe(1); // a timer, not a loop
    await jest.advanceTimersByTimeAsync(999);
    expect(a.started).toEqual([]);
    await jest.advanceTimersByTimeAsync(1);
    expect(a.started).toEqual([2]);
    expect(jest.getTimerCount()).toBe(1); // the wait before attempt 3
    await jest.advanceTimersByTimeAsync(1_000);
    expect(await outcome).toEqual({ value: 'ok at 3' });
    expect(a.started).toEqual([2, 3]);
    expect(retries).toEqual([
      [2, 1_000, 'server_error'],
      [3, 1_000, 'server_error'],
    ]);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('gives the delay function the error and the number of the attempt to come', async () => {
    const seen: Array<[string, number]> = [];
    const a = attempts();
    const delay = (error: unknown, attempt: number) => {
      seen.push([(error as Error).message, attempt]);
      return attempt * 100;
    };
    const { outcome, retries } = run({ attempts: 3, delay }, a.next);
    await jest.advanceTimersByTimeAsync(200);
    expect(a.started).toEqual([2]);
    await jest.advanceTimersByTimeAsync(300);
    expect(a.started).toEqual([2, 3]);
    expect(await outcome).toEqual({
      error: expect.objectContaining({ message: expect.stringMatching(/#3$/) }),
    });
    expect(seen).toEqual([
      [expect.stringMatching(/#1$/), 2],
      [expect.stringMatching(/#2$/), 3],
    ]);
    expect(retries.map(([attempt, ms]) => [attempt, ms])).toEqual([
      [2, 200],
      [3, 300],
    ]);
  });

  it('with no delay, starts the next attempt without any timer', async () => {
    const a = attempts(2);
    const { outcome } = run({ attempts: 2 }, a.next);
    expect(jest.getTimerCount()).toBe(0);
    expect(await outcome).toEqual({ value: 'ok at 2' });
  });

  it('an abort during the wait ends it with the SDK abort error, and starts no attempt', async () => {
    const a = attempts();
    const controller = new AbortController();
    const { outcome } = run({ attempts: 3, delay: 1_000 }, a.next, controller.signal);
    await jest.advanceTimersByTimeAsync(500);
    controller.abort();
    const result = await outcome;
    expect(result).toEqual({ error: expect.any(OpenAI.APIUserAbortError) });
    expect(a.started).toEqual([]);
    expect(jest.getTimerCount()).toBe(0); // the wait's timer went with it
    await jest.advanceTimersByTimeAsync(10_000);
    expect(a.started).toEqual([]);
  });

  it('an abort during the second wait keeps the attempts already made, and starts no more', async () => {
    const a = attempts();
    const controller = new AbortController();
    const { outcome } = run({ attempts: 4, delay: 100 }, a.next, controller.signal);
    await jest.advanceTimersByTimeAsync(150);
    expect(a.started).toEqual([2]);
    controller.abort();
    expect(await outcome).toEqual({ error: expect.any(OpenAI.APIUserAbortError) });
    await jest.advanceTimersByTimeAsync(10_000);
    expect(a.started).toEqual([2]);
  });

  it('an already aborted signal rejects with the first error, and waits for nothing', async () => {
    const a = attempts();
    const { outcome, retries } = run({ attempts: 3, delay: 1_000 }, a.next, AbortSignal.abort());
    expect(jest.getTimerCount()).toBe(0);
    expect(await outcome).toEqual({
      error: expect.objectContaining({ message: expect.stringMatching(/#1$/) }),
    });
    expect(a.started).toEqual([]);
    expect(retries).toEqual([]);
  });

  it('stops at an error that is not retried, without another wait', async () => {
    const started: number[] = [];
    const badRequest = new OpenAI.APIError(400, undefined, 'bad', new Headers());
    const { outcome, retries } = run({ attempts: 5, delay: 100 }, (attempt) => {
      started.push(attempt);
      return Promise.reject(badRequest);
    });
    await jest.advanceTimersByTimeAsync(100);
    expect(await outcome).toEqual({ error: badRequest });
    expect(started).toEqual([2]);
    expect(retries).toEqual([[2, 100, 'server_error']]);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('tells the options hook too, with the error', async () => {
    const heard: unknown[][] = [];
    const a = attempts(2);
    const { outcome } = run({ onRetry: (...args) => heard.push(args) }, a.next);
    await outcome;
    expect(heard).toEqual([
      [2, 0, 'server_error', expect.objectContaining({ message: expect.stringMatching(/#1$/) })],
    ]);
  });

  it('attempts: 1 never retries', async () => {
    const a = attempts();
    const { outcome, retries } = run({ attempts: 1, delay: 100 }, a.next);
    expect(await outcome).toEqual({
      error: expect.objectContaining({ message: expect.stringMatching(/#1$/) }),
    });
    expect(a.started).toEqual([]);
    expect(retries).toEqual([]);
  });
});

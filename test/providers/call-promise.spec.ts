import { APIPromise as OpenAIPromise } from 'openai/core/api-promise';
import { APIPromise as AnthropicPromise } from '@anthropic-ai/sdk/core/api-promise';
import { openaiProvider } from '../../src/providers/openai/openai-deployment';
import { anthropicProvider } from '../../src/providers/anthropic/anthropic-deployment';
import type { Answer } from '../../src/registry/deployment';
import type { SettledCall } from '../../src/providers/call-promise';

function answer(data: unknown, headers: Record<string, string> = {}): Answer {
  return { data, response: new Response('{}', { status: 200, headers }), options: {} };
}

type Like = Promise<unknown> & {
  asResponse(): Promise<Response>;
  withResponse(): Promise<Record<string, unknown>>;
  parse(): Promise<unknown>;
  _thenUnwrap(transform: (data: unknown, answer: Answer) => unknown): Like;
};

const sdks: Array<{
  sdk: string;
  make: (a: Promise<Answer>) => Like;
  open: (a: Promise<Answer>) => Like;
  Base: abstract new (...args: never[]) => unknown;
  ids: Record<string, string>;
  expected: Record<string, string>;
}> = [
  {
    sdk: 'openai',
    make: (a: Promise<Answer>) => openaiProvider.promise.over(a) as Like,
    open: (a: Promise<Answer>) => openaiProvider.promise.open(settledBy(a)) as unknown as Like,
    Base: OpenAIPromise,
    ids: { 'x-request-id': 'req_1' },
    expected: { request_id: 'req_1' },
  },
  {
    sdk: '@anthropic-ai/sdk',
    make: (a: Promise<Answer>) => anthropicProvider.promise.over(a) as Like,
    open: (a: Promise<Answer>) => anthropicProvider.promise.open(settledBy(a)) as unknown as Like,
    Base: AnthropicPromise,
    ids: { 'request-id': 'req_2', 'anthropic-workspace-id': 'ws_9' },
    expected: { request_id: 'req_2', workspace_id: 'ws_9' },
  },
];

/**
 * What a dispatch does with an opened call's promise: once its answer came, keeps it and resolves
 * the promise with its data (read once); or rejects it with the error.
 */
function settledBy(a: Promise<Answer>): SettledCall {
  const call: { answer: Answer | undefined } & SettledCall = {
    answer: undefined,
    settlesWith(resolveData, reject) {
      a.then((got) => {
        call.answer = got;
        resolveData(got.data);
      }, reject);
    },
  };
  return call;
}

// Over the dispatch's promise, or opened and settled by the dispatch itself: the caller sees the same.
const kits = sdks.flatMap(({ open, ...sdk }) => [
  { ...sdk, how: 'over an answer' },
  { ...sdk, make: open, how: 'settled by its dispatch' },
]);

describe.each(kits)('what a call returns, for $sdk, $how', ({ make, Base, ids, expected }) => {
  it("is an instance of the SDK's APIPromise and of Promise", () => {
    const p = make(Promise.resolve(answer(1)));
    expect(p).toBeInstanceOf(Base);
    expect(p).toBeInstanceOf(Promise);
  });

  it('await gives the data, parse() the same, asResponse() the response', async () => {
    const a = answer({ id: 'x' }, ids);
    const p = make(Promise.resolve(a));
    await expect(p).resolves.toEqual({ id: 'x' });
    await expect(p.parse()).resolves.toBe(a.data);
    await expect(p.asResponse()).resolves.toBe(a.response);
  });

  it("withResponse() gives data, response and the SDK's id fields from the headers", async () => {
    const a = answer({ id: 'x' }, ids);
    const got = await make(Promise.resolve(a)).withResponse();
    expect(got).toEqual({ data: a.data, response: a.response, ...expected });
  });

  it("a failed call rejects await, catch, asResponse and withResponse with the call's error", async () => {
    const error = new Error('429');
    const failed = Promise.reject(error);
    const p = make(failed);
    await expect(p).rejects.toBe(error);
    await expect(p.catch((e: unknown) => e)).resolves.toBe(error);
    await expect(p.asResponse()).rejects.toBe(error);
    await expect(p.withResponse()).rejects.toBe(error);
    let ran = 0;
    await expect(p.finally(() => ran++)).rejects.toBe(error);
    expect(ran).toBe(1);
  });

  it('_thenUnwrap() transforms the data and keeps the response', async () => {
    const a = answer({ n: 2 }, ids);
    const unwrapped = make(Promise.resolve(a))._thenUnwrap(
      (data, props) => (data as { n: number }).n * 10 + (props === a ? 1 : 0),
    );
    expect(unwrapped).toBeInstanceOf(Base);
    await expect(unwrapped).resolves.toBe(21);
    await expect(unwrapped.asResponse()).resolves.toBe(a.response);
  });

  it('the body is read once, however many ways the caller asks for it', async () => {
    let reads = 0;
    const a = answer({ id: 'once' });
    const p = make(
      Promise.resolve({
        ...a,
        get data() {
          reads++;
          return a.data;
        },
      }),
    );
    await Promise.all([p, p.parse(), p.withResponse(), p.then((d) => d)]);
    expect(reads).toBe(1);
  });
});

describe.each(sdks)('an opened call promise, for $sdk', ({ open, make }) => {
  it('is handed on as it is, not wrapped again', () => {
    const opened = open(Promise.resolve(answer(1)));
    expect(make(opened as unknown as Promise<Answer>)).toBe(opened);
  });

  it('derives plain promises: then() and parse() are not of the SDK kind', async () => {
    const opened = open(Promise.resolve(answer({ id: 'y' })));
    const derived = opened.then((d) => d);
    expect(derived.constructor).toBe(Promise);
    await expect(derived).resolves.toEqual({ id: 'y' });
  });
});

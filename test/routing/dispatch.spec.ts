import OpenAI from 'openai';
import { ask, GPT, requestCounts, rig } from '../support/upstream';

// A call's dispatch is the outcome of its first attempt: these pin down that every way an attempt
// can end reaches the caller once, counted once, with nothing left unhandled.
describe('dispatch: how a call ends', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  beforeAll(() => process.on('unhandledRejection', onUnhandled));
  afterAll(() => process.off('unhandledRejection', onUnhandled));
  afterEach(() => expect(unhandled).toEqual([]));

  it('failed first attempts fail over and every answer reaches its caller', async () => {
    const r = await rig({ openai: 2 });
    try {
      const [broken] = r.upstream.deployments;
      broken!.fail({ kind: 'status', status: 500 }, Infinity);
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => r.sb.chat.completions.create(ask(`call ${i}`))),
      );
      answers.forEach((c, i) => expect(c.choices[0]!.message.content).toContain(`call ${i}`));
      // Each request the broken deployment took was an attempt that failed over (it is marked
      // down after three): the other one answered all 20 calls.
      const counts = requestCounts(r.upstream);
      const failedOver = counts[broken!.name]!;
      expect(failedOver).toBeGreaterThan(0);
      expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(20 + failedOver);
      expect(r.sb.failures()).toEqual({});
    } finally {
      await r.close();
    }
  });

  it('a retryIf that throws ends the call with what it threw, counted once', async () => {
    const boom = new Error('retryIf exploded');
    const r = await rig({
      openai: 2,
      failover: {
        retryIf: () => {
          throw boom;
        },
      },
    });
    try {
      for (const d of r.upstream.deployments) d.fail({ kind: 'status', status: 500 });
      await expect(r.sb.chat.completions.create(ask('x'))).rejects.toBe(boom);
      expect(r.sb.failures()).toEqual({ [GPT]: { rateLimited: 0, other: 1 } });
      const sent = Object.values(requestCounts(r.upstream)).reduce((a, b) => a + b, 0);
      expect(sent).toBe(1);
    } finally {
      await r.close();
    }
  });

  it('an SDK that throws before sending: the call rejects with it, counted once', async () => {
    const r = await rig({ openai: 1 });
    try {
      const [only] = [...r.sb.deployments.values()];
      const chat = (only as unknown as { client: OpenAI }).client.chat.completions;
      const refused = new TypeError('the SDK refused the params');
      chat.create = (() => {
        throw refused;
      }) as unknown as typeof chat.create;
      let promise: Promise<unknown> | undefined;
      expect(() => (promise = r.sb.chat.completions.create(ask('x')))).not.toThrow();
      await expect(promise).rejects.toBe(refused);
      expect(r.sb.failures()).toEqual({ [GPT]: { rateLimited: 0, other: 1 } });
      expect(requestCounts(r.upstream)).toEqual({ [r.upstream.deployments[0]!.name]: 0 });
    } finally {
      await r.close();
    }
  });

  it('with one attempt, a failure reaches the caller as the SDK error, counted once', async () => {
    const r = await rig({ openai: 2, failover: { attempts: 1 } });
    try {
      for (const d of r.upstream.deployments) d.fail({ kind: 'status', status: 500 });
      await expect(r.sb.chat.completions.create(ask('x'))).rejects.toBeInstanceOf(
        OpenAI.InternalServerError,
      );
      expect(r.sb.failures()).toEqual({ [GPT]: { rateLimited: 0, other: 1 } });
    } finally {
      await r.close();
    }
  });

  it("a call its caller aborts, in flight or queued, rejects with the SDK's abort error and is not a failure", async () => {
    const r = await rig({
      openai: 1,
      quota: { tpm: 1_000, rpm: 100 },
      queue: { maxWait: 60_000 },
    });
    try {
      const [only] = r.upstream.deployments;
      only!.fail({ kind: 'hang' });
      const inFlight = new AbortController();
      const hanging = r.sb.chat.completions.create(ask('hang', { max_tokens: 900 }), {
        signal: inFlight.signal,
      });
      // No room for a second 900-token reservation: it waits in the queue.
      const queued = new AbortController();
      const waiting = r.sb.chat.completions.create(ask('wait', { max_tokens: 900 }), {
        signal: queued.signal,
      });
      await Promise.resolve();
      expect(r.sb.queue!.length(GPT)).toBe(1);
      queued.abort();
      await expect(waiting).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
      inFlight.abort();
      await expect(hanging).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
      expect(r.sb.failures()).toEqual({});
    } finally {
      await r.close();
    }
  });
});

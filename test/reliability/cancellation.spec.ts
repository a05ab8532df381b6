import { getEventListeners } from 'node:events';
import type { Switchboard } from 'nestjs-switchboard';
import {
  APIS,
  bench,
  send,
  type Api,
  chat,
  flushRejections,
  invariantViolations,
  message,
  recordUnhandled,
  upstreamRequests,
  type Bench,
  type UnhandledRecorder,
} from './harness';

/** A prompt long enough for a stream of many events: the upstream echoes it word by word. */
const LONG = Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ');

const create = (sb: Switchboard, a: Api, body: object, options?: object): Promise<any> =>
  send(sb, a, body, options);

describe.each(APIS)('cancellation, $api', (a) => {
  let b: Bench;
  let sb: Switchboard;
  let unhandled: UnhandledRecorder;
  const primary = `${a.prefix}0`;
  const backup = `${a.prefix}1`;
  const body = (content: string, extra: object = {}) =>
    a.api === 'chat'
      ? chat(content, { session_id: 's', ...extra })
      : message(content, { session_id: 's', ...extra });
  const estimate = (content: string) => Math.ceil(content.length / 4);

  beforeAll(async () => {
    unhandled = recordUnhandled();
    b = await bench([primary, backup]);
  });
  afterAll(async () => {
    await b.close();
    unhandled.dispose();
  });
  beforeEach(() => {
    b.upstream.reset();
    for (const d of b.upstream.deployments) {
      d.latency = 0;
      d.chunkDelay = 0;
    }
    sb = b.build(
      [
        { name: primary, provider: a.provider },
        { name: backup, provider: a.provider },
      ],
      { failover: { attempts: 3 } },
    );
    sb.registry.sessions.set('s', primary); // every call starts on the primary
  });
  afterEach(async () => {
    // Nothing is left open upstream, nothing is marked down, nothing went negative.
    await Promise.all(b.upstream.deployments.map((d) => d.whenIdle()));
    for (const d of sb.deployments.values()) {
      for (const m of d.models.values()) expect(m.isCooling()).toBe(false);
    }
    expect(invariantViolations(sb)).toEqual([]);
    await sb.close();
    await flushRejections();
    expect(unhandled.seen).toEqual([]);
  });

  const state = (name: string) => b.state(sb, name);

  it.each([false, true])(
    'abort before the response (stream: %p): connection closed, no retry, request charged once, tokens refunded',
    async (stream) => {
      b.upstream.deployment(primary).latency = 10_000;
      const controller = new AbortController();
      const call = create(sb, a, body('cancel me', { stream }), { signal: controller.signal });
      await b.upstream.deployment(primary).waitFor((d) => d.stats.inFlight === 1);
      controller.abort();
      await expect(call).rejects.toBeInstanceOf(a.sdk.APIUserAbortError);
      await b.upstream.deployment(primary).whenIdle();
      expect(b.upstream.deployment(primary).stats.aborted).toBe(1);
      expect(upstreamRequests(b.upstream)).toBe(1);
      expect(state(primary).rpmUsage).toBe(1);
      expect(state(primary).tpmUsage).toBe(0);
      expect(state(backup).rpmUsage).toBe(0);
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    },
  );

  it('abort mid-stream: the stream ends, connection closed, no retry, usage charged once', async () => {
    b.upstream.deployment(primary).chunkDelay = 25;
    const controller = new AbortController();
    const stream = await create(sb, a, body(LONG, { stream: true }), { signal: controller.signal });
    let events = 0;
    let input = 0;
    const consumed = (async () => {
      for await (const event of stream as AsyncIterable<any>) {
        events++;
        if (event.type === 'message_start')
          input = event.message.usage.input_tokens + event.message.usage.output_tokens;
        if (events === 3) controller.abort();
      }
    })();
    // The SDKs end an aborted stream quietly, or with their abort error: never anything else.
    await consumed.catch((error: unknown) => expect(error).toBeInstanceOf(a.sdk.APIUserAbortError));
    expect(events).toBeGreaterThanOrEqual(3);
    expect(events).toBeLessThan(40); // the rest of the 80 words never came
    await b.upstream.deployment(primary).whenIdle();
    expect(b.upstream.deployment(primary).stats.aborted).toBe(1);
    expect(upstreamRequests(b.upstream)).toBe(1);
    expect(state(primary).rpmUsage).toBe(1);
    // Charged what the stream reported before the abort, once: OpenAI reports usage only at the
    // end, so the estimate stays; Anthropic's message_start carried input + 1 output token.
    expect(state(primary).tpmUsage).toBe(a.api === 'chat' ? estimate(LONG) : input);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it.each(['break', 'controller.abort()'])(
    'a consumer that stops (%s) closes the connection: no retry, no mark down',
    async (how) => {
      b.upstream.deployment(primary).chunkDelay = 25;
      const stream = await create(sb, a, body(LONG, { stream: true }));
      let events = 0;
      for await (const _ of stream as AsyncIterable<unknown>) {
        if (++events < 3) continue;
        if (how === 'break') break;
        (stream as { controller: AbortController }).controller.abort();
      }
      expect(events).toBeLessThan(40);
      await b.upstream.deployment(primary).whenIdle();
      expect(b.upstream.deployment(primary).stats.aborted).toBe(1);
      expect(upstreamRequests(b.upstream)).toBe(1);
      expect(state(primary).rpmUsage).toBe(1);
      expect(state(primary).tpmUsage).toBeLessThanOrEqual(estimate(LONG) + 2);
    },
  );

  it('abort while waiting between attempts: the SDK abort error at once, no further attempt', async () => {
    let waiting!: () => void;
    const waitBegan = new Promise<void>((resolve) => (waiting = resolve));
    sb = b.build(
      [
        { name: primary, provider: a.provider },
        { name: backup, provider: a.provider },
      ],
      // Far longer than the test's own timeout: only the abort can end this wait in time.
      { failover: { attempts: 3, delay: 10 * 60_000, onRetry: () => waiting() } },
    );
    sb.registry.sessions.set('s', primary);
    b.upstream.deployment(primary).fail({ kind: 'status', status: 503 });
    const controller = new AbortController();
    const call = create(sb, a, body('x'), { signal: controller.signal });
    await waitBegan;
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(a.sdk.APIUserAbortError);
    expect(upstreamRequests(b.upstream)).toBe(1);
    expect(state(primary).rpmUsage).toBe(1);
    expect(state(backup).rpmUsage).toBe(0);
  });

  it('abort during the second attempt: the SDK abort error, both connections closed, no third attempt', async () => {
    b.upstream.deployment(primary).fail({ kind: 'status', status: 500 });
    b.upstream.deployment(backup).latency = 10_000;
    const controller = new AbortController();
    const call = create(sb, a, body('x'), { signal: controller.signal });
    await b.upstream.deployment(backup).waitFor((d) => d.stats.inFlight === 1);
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(a.sdk.APIUserAbortError);
    await b.upstream.deployment(backup).whenIdle();
    expect(upstreamRequests(b.upstream)).toBe(2);
    expect(state(primary).rpmUsage + state(backup).rpmUsage).toBe(2);
    expect(state(backup).tpmUsage).toBe(0);
  });

  it('one long-lived signal over many calls keeps no listener behind', async () => {
    const controller = new AbortController();
    for (let i = 0; i < 20; i++) {
      const result = await create(sb, a, body(`call ${i}`, { stream: i % 2 === 0 }), {
        signal: controller.signal,
      });
      if (i % 2 === 0) for await (const _ of result as AsyncIterable<unknown>) void _;
    }
    // a failed-over call too
    b.upstream.deployment(primary).fail({ kind: 'status', status: 503 });
    await create(sb, a, body('failover'), { signal: controller.signal });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});

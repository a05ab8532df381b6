import type { Switchboard } from 'nestjs-switchboard';
import type { SimulatedFault } from 'nestjs-switchboard/testing';
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
  textOf,
  upstreamRequests,
  type Bench,
  type Spec,
  type UnhandledRecorder,
} from './harness';

const NAMES = ['oai0', 'oai1', 'oai2', 'claude0', 'claude1', 'claude2'];

function call(sb: Switchboard, a: Api, content: string, options?: object): Promise<unknown> {
  return send(sb, a, a.api === 'chat' ? chat(content) : message(content), options);
}

const settle = (p: Promise<unknown>) =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error: error as Error }),
  );

/** Every retry the failover announced, as `[attempt, delay, reason]`. */
function retryLog(): {
  onRetry: (attempt: number, delay: number, reason: string) => void;
  seen: Array<[number, number, string]>;
} {
  const seen: Array<[number, number, string]> = [];
  return { seen, onRetry: (attempt, delay, reason) => seen.push([attempt, delay, reason]) };
}

describe('everything down', () => {
  let b: Bench;
  let unhandled: UnhandledRecorder;
  let tick = 0;
  beforeAll(async () => {
    unhandled = recordUnhandled();
    // A clock that only moves forward, one step per reading: the last request has the largest `at`.
    b = await bench(NAMES, { clock: () => 1_700_000_000_000 + ++tick });
  });
  afterAll(async () => {
    await b.close();
    unhandled.dispose();
  });
  beforeEach(() => b.upstream.reset());
  afterEach(async () => {
    await flushRejections();
    expect(unhandled.seen).toEqual([]);
  });

  const specs = (a: Api, n: number, extra: Partial<Spec> = {}): Spec[] =>
    Array.from({ length: n }, (_, i) => ({
      name: `${a.prefix}${i}`,
      provider: a.provider,
      ...extra,
    }));

  /** The simulated deployment that received the most recent request. */
  const lastReceiver = () =>
    b.upstream.deployments
      .filter((d) => d.requests.length > 0)
      .reduce((x, y) => (x.requests.at(-1)!.at > y.requests.at(-1)!.at ? x : y)).name;

  describe.each(APIS)('$api', (a) => {
    it('every deployment failing: the last upstream error after exactly `attempts` tries, each deployment once', async () => {
      const sb = b.build(specs(a, 3), { failover: { attempts: 3 } });
      for (const name of ['0', '1', '2'].map((i) => `${a.prefix}${i}`)) {
        b.upstream
          .deployment(name)
          .fail({ kind: 'status', status: 503, message: `down at ${name}` }, Infinity);
      }
      const result = await settle(call(sb, a, 'x'));
      expect(result.ok).toBe(false);
      const error = (result as { error: Error }).error;
      expect(error).toBeInstanceOf(a.sdk.InternalServerError);
      expect(error.message).toContain(`down at ${lastReceiver()}`);
      expect(upstreamRequests(b.upstream)).toBe(3);
      for (const d of b.upstream.deployments) expect(d.stats.requests).toBeLessThanOrEqual(1);
      expect(invariantViolations(sb)).toEqual([]);
    });

    it('more attempts than deployments: tries them again, still exactly `attempts` requests', async () => {
      const sb = b.build(specs(a, 2), { failover: { attempts: 5 } });
      for (const i of [0, 1])
        b.upstream
          .deployment(`${a.prefix}${i}`)
          .fail({ kind: 'status', status: 500, message: `#${i}` }, Infinity);
      const result = await settle(call(sb, a, 'x'));
      expect(result.ok).toBe(false);
      expect((result as { error: Error }).error.message).toContain(`#${lastReceiver().slice(-1)}`);
      expect(upstreamRequests(b.upstream)).toBe(5);
      expect(invariantViolations(sb)).toEqual([]);
    });

    it.each<[string, SimulatedFault, 'APIConnectionError' | 'APIError' | 'RateLimitError', number]>(
      [
        // A reset before any answer may be a stale pooled socket's: sent again at once, once.
        ['reset', { kind: 'reset' }, 'APIConnectionError', 2],
        ['429', { kind: 'status', status: 429, retryAfterMs: 60_000 }, 'RateLimitError', 1],
        ['malformed', { kind: 'malformed' }, 'APIError', 1],
      ],
    )(
      'every deployment %s: everything marked down as the table says, attempts still made, bounded',
      async (_name, fault, errorClass, requestsPerAttempt) => {
        const sb = b.build(specs(a, 3), { failover: { attempts: 4 } });
        for (const d of b.upstream.deployments) d.fail(fault, Infinity);
        const concurrent = 20;
        const result = await Promise.all(
          Array.from({ length: concurrent }, (_, i) => settle(call(sb, a, `c${i}`))),
        );
        for (const r of result) {
          expect(r.ok).toBe(false);
          expect((r as { error: Error }).error).toBeInstanceOf(a.sdk[errorClass]);
        }
        if (fault.kind === 'status' && fault.status === 429) {
          // No retry storm: once the 429s have cooled every deployment, the switchboard knows
          // there is no room and fails the further attempts itself, without sending them.
          expect(upstreamRequests(b.upstream)).toBeGreaterThanOrEqual(concurrent);
          expect(upstreamRequests(b.upstream)).toBeLessThanOrEqual(concurrent * 2);
        } else {
          // Each attempt reached the upstream, a reset one at most twice.
          expect(upstreamRequests(b.upstream)).toBeGreaterThanOrEqual(concurrent * 4);
          expect(upstreamRequests(b.upstream)).toBeLessThanOrEqual(
            concurrent * 4 * requestsPerAttempt,
          );
        }
        // 429 and resets mark down at once; malformed answers count as failures, 3 in a row do.
        for (const d of sb.deployments.values())
          expect([...d.models.values()][0]!.isCooling()).toBe(true);
        expect(invariantViolations(sb)).toEqual([]);
      },
    );

    it('every deployment hanging: the SDK timeout error after one deadline per attempt', async () => {
      const retries = retryLog();
      const sb = b.build(specs(a, 2, { timeout: 400 }), {
        failover: { attempts: 2, onRetry: retries.onRetry },
      });
      for (const d of b.upstream.deployments) d.fail({ kind: 'hang' }, Infinity);
      const result = await settle(call(sb, a, 'x'));
      expect(result.ok).toBe(false);
      expect((result as { error: Error }).error).toBeInstanceOf(a.sdk.APIConnectionTimeoutError);
      // The second attempt began only once the first had timed out, without a wait between;
      // that waits are timers, not loops, the unit specs of failover() and attempt() count.
      expect(retries.seen).toEqual([[2, 0, 'timeout']]);
      expect(upstreamRequests(b.upstream)).toBe(2);
      for (const d of sb.deployments.values())
        expect([...d.models.values()][0]!.isCooling()).toBe(false);
      await Promise.all(b.upstream.deployments.map((d) => d.whenIdle())); // connections closed
    });

    it('every deployment refusing connections: the SDK connection error, at once', async () => {
      const retries = retryLog();
      const sb = b.build(specs(a, 3, { dead: true }), {
        failover: { attempts: 3, onRetry: retries.onRetry },
      });
      const result = await settle(call(sb, a, 'x'));
      expect(result.ok).toBe(false);
      expect((result as { error: Error }).error).toBeInstanceOf(a.sdk.APIConnectionError);
      // At once: no wait before either further attempt.
      expect(retries.seen).toEqual([
        [2, 0, 'connection'],
        [3, 0, 'connection'],
      ]);
      for (const d of sb.deployments.values()) {
        const m = [...d.models.values()][0]!;
        expect(m.isCooling()).toBe(true);
        expect(m.rpmUsage).toBe(1);
      }
    });

    it('a delay between attempts is announced and made before each further attempt', async () => {
      const retries = retryLog();
      const sb = b.build(specs(a, 2), {
        failover: { attempts: 3, delay: 150, onRetry: retries.onRetry },
      });
      for (const d of b.upstream.deployments) d.fail({ kind: 'status', status: 502 }, Infinity);
      const result = await settle(call(sb, a, 'x'));
      expect(result.ok).toBe(false);
      expect(upstreamRequests(b.upstream)).toBe(3);
      // How long the waits last, and that they are waited and not spun, the fake-timer unit
      // spec of failover() shows; here, that the whole stack makes them.
      expect(retries.seen).toEqual([
        [2, 150, 'server_error'],
        [3, 150, 'server_error'],
      ]);
    });

    it('every deployment cooling: the best-effort attempt is made and succeeds', async () => {
      const logs: string[] = [];
      const logger = {
        log: (m: string) => logs.push(m),
        warn: (m: string) => logs.push(m),
        error: (m: string) => logs.push(m),
      };
      const sb = b.build(specs(a, 3), { logger });
      for (const d of sb.deployments.values())
        for (const m of d.models.values()) m.markDown(60_000);
      const result = await call(sb, a, 'best effort', undefined);
      expect(await textOf(result)).toBe('best effort');
      expect(upstreamRequests(b.upstream)).toBe(1);
      expect(logs.some((l) => l.includes('best-effort'))).toBe(true);
      // and streaming, with a session, too
      const stream = await (a.api === 'chat'
        ? sb.chat.completions.create(chat('streamed', { stream: true, session_id: 's' }) as never)
        : sb.messages.create(message('streamed', { stream: true, session_id: 's' }) as never));
      expect(await textOf(stream)).toBe('streamed');
      expect(upstreamRequests(b.upstream)).toBe(2);
      for (const d of sb.deployments.values())
        expect([...d.models.values()][0]!.isCooling()).toBe(true);
      expect(invariantViolations(sb)).toEqual([]);
    });

    it('every deployment cooling and the upstream failing: the upstream error after the attempts', async () => {
      const sb = b.build(specs(a, 2), { failover: { attempts: 2 } });
      for (const d of sb.deployments.values())
        for (const m of d.models.values()) m.markDown(60_000);
      for (const d of b.upstream.deployments) d.fail({ kind: 'status', status: 500 }, Infinity);
      await expect(call(sb, a, 'x')).rejects.toBeInstanceOf(a.sdk.InternalServerError);
      expect(upstreamRequests(b.upstream)).toBe(2);
    });
  });
});

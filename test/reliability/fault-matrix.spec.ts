import type { SimulatedFault } from 'nestjs-switchboard/testing';
import {
  APIS,
  bench,
  send,
  chat,
  flushRejections,
  invariantViolations,
  message,
  recordUnhandled,
  recorderHearsRejections,
  textOf,
  upstreamRequests,
  type Bench,
  type UnhandledRecorder,
} from './harness';

/** What DESIGN.md's behaviour table says a fault does to the model it hit. */
type MarkDown =
  | { for: 'retry-after'; ms: number } // the cooldown the upstream asked for
  | { for: 'cooldown' } // the model's configured cooldown
  | { for: 'none' };

/**
 * What the caller sees:
 * - `failover`: the call succeeds on the other deployment (the faulty one was tried first);
 * - `stream-error`: the stream was already handed over, so its consumer gets the SDK's error of
 *   `error` class and nothing is retried.
 */
type Outcome =
  | { kind: 'failover' }
  | { kind: 'resent' } // sent again at once to the same deployment, which then answered
  | { kind: 'stream-error'; error: 'APIConnectionError' | 'APIError' };

interface FaultCase {
  fault: string;
  /** What the faulty deployment plays; absent = it points at a port nothing listens on. */
  inject?: SimulatedFault;
  /** How many requests in a row get the fault (default 1). */
  times?: number;
  markDown: MarkDown;
  /** Outcome of a non-streaming call, and of a streaming one when it differs. */
  outcome: Outcome;
  streamOutcome?: Outcome;
}

const COOLDOWN = 5_000; // configured per model, so that it differs from the 10 s default
/**
 * The faulty deployment's deadline where it hangs: all a hang can do is outlast it, and the
 * request reaches the upstream long before it even on a busy machine. The backup keeps the
 * bench's 2 s, in which any answer fits.
 */
const HANG_TIMEOUT = 500;
const failover: Outcome = { kind: 'failover' };
const none: MarkDown = { for: 'none' };
const cooldown: MarkDown = { for: 'cooldown' };

// prettier-ignore
const FAULTS: FaultCase[] = [
  { fault: '429 with retry-after (s)',    inject: { kind: 'status', status: 429, retryAfter: 42 },        markDown: { for: 'retry-after', ms: 42_000 }, outcome: failover },
  { fault: '429 with retry-after-ms',     inject: { kind: 'status', status: 429, retryAfter: 9, retryAfterMs: 7_500 }, markDown: { for: 'retry-after', ms: 7_500 }, outcome: failover },
  { fault: '429 without retry-after',     inject: { kind: 'status', status: 429 },                        markDown: cooldown, outcome: failover },
  { fault: '500',                         inject: { kind: 'status', status: 500 },                        markDown: none,     outcome: failover },
  { fault: '503',                         inject: { kind: 'status', status: 503 },                        markDown: none,     outcome: failover },
  { fault: '529 overloaded',              inject: { kind: 'status', status: 529 },                        markDown: none,     outcome: failover },
  { fault: 'connection refused',                                                                          markDown: cooldown, outcome: failover },
  { fault: 'reset before the response, once (a stale pooled socket)', inject: { kind: 'reset' },          markDown: none,     outcome: { kind: 'resent' } },
  { fault: 'reset before the response, on the resend too', inject: { kind: 'reset' }, times: 2,           markDown: cooldown, outcome: failover },
  { fault: 'hang past the timeout',       inject: { kind: 'hang' },                                       markDown: none,     outcome: failover },
  { fault: 'drop mid-stream',             inject: { kind: 'drop-mid-stream', afterEvents: 2 },            markDown: cooldown, outcome: failover,
    streamOutcome: { kind: 'stream-error', error: 'APIConnectionError' } },
  { fault: 'malformed JSON / SSE',        inject: { kind: 'malformed' },                                  markDown: none,     outcome: failover,
    streamOutcome: { kind: 'stream-error', error: 'APIError' } },
];

const CASES = FAULTS.flatMap((c) =>
  APIS.flatMap((a) =>
    [false, true].map((stream) => ({
      ...c,
      ...a,
      stream,
      expected: (stream && c.streamOutcome) || c.outcome,
      name: `${c.fault}, ${a.api}, ${stream ? 'streaming' : 'not streaming'}`,
    })),
  ),
);

describe('fault matrix: every fault, both APIs, streaming or not', () => {
  let b: Bench;
  let unhandled: UnhandledRecorder;
  beforeAll(async () => {
    unhandled = recordUnhandled();
    b = await bench(['oai-primary', 'oai-backup', 'claude-primary', 'claude-backup']);
    // Both SDKs print a malformed SSE line to the console before throwing; keep the report clean.
    jest.spyOn(console, 'error').mockImplementation(() => undefined);
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await b.close();
    unhandled.dispose();
  });
  beforeEach(() => b.upstream.reset());

  it('the unhandled-rejection recorder works', async () => {
    expect(await recorderHearsRejections(unhandled)).toBe(true);
  });

  it.each(CASES)('$name', async (c) => {
    const prefix = c.provider === 'openai' ? 'oai' : 'claude';
    const [primary, backup] = [`${prefix}-primary`, `${prefix}-backup`];
    // The switchboard's clock stands still: a cooldown's remaining time is exactly its length.
    const sb = b.build(
      [
        {
          name: primary,
          provider: c.provider,
          dead: c.inject === undefined,
          cooldown: COOLDOWN,
          timeout: c.inject?.kind === 'hang' ? HANG_TIMEOUT : undefined,
        },
        { name: backup, provider: c.provider, cooldown: COOLDOWN },
      ],
      { clock: () => 1_700_000_000_000 },
    );
    if (c.inject) b.upstream.deployment(primary).fail(c.inject, c.times ?? 1);
    sb.registry.sessions.set('s', primary); // the first attempt goes to the faulty deployment
    const id = `call-${c.name}`;
    const params = {
      ...(c.api === 'chat' ? chat(id) : message(id)),
      stream: c.stream,
      session_id: 's',
    };

    const call = send(sb, c, params);

    if (c.expected.kind === 'failover' || c.expected.kind === 'resent') {
      const text = await textOf(await call);
      expect(text).toBe(id);
      expect(b.upstream.deployment(backup).stats.requests).toBe(
        c.expected.kind === 'failover' ? 1 : 0,
      );
    } else {
      const stream = await call; // the stream was handed over before the fault
      const ErrorClass = c.sdk[c.expected.error];
      const error = await textOf(stream).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ErrorClass);
      expect(b.upstream.deployment(backup).stats.requests).toBe(0); // nothing retried
    }
    const resends = c.expected.kind === 'resent' ? 1 : (c.times ?? 1) - 1;
    if (c.inject) expect(b.upstream.deployment(primary).stats.requests).toBe(1 + resends);

    const faulty = b.state(sb, primary);
    switch (c.markDown.for) {
      case 'none':
        expect(faulty.isCooling()).toBe(false);
        break;
      case 'cooldown':
        expect(faulty.cooldownRemaining).toBe(COOLDOWN);
        break;
      case 'retry-after':
        expect(faulty.cooldownRemaining).toBe(c.markDown.ms);
        break;
    }
    expect(b.state(sb, backup).isCooling()).toBe(false);
    // Each attempt counted once; nothing negative, nothing NaN.
    expect(faulty.rpmUsage).toBe(1);
    expect(b.state(sb, backup).rpmUsage).toBe(c.expected.kind === 'failover' ? 1 : 0);
    expect(invariantViolations(sb)).toEqual([]);
    await sb.close();
    await flushRejections();
    expect(unhandled.seen).toEqual([]);
    expect(upstreamRequests(b.upstream)).toBeLessThanOrEqual(3);
  });
});

describe('the 3-consecutive-5xx rule, both APIs', () => {
  let b: Bench;
  beforeAll(async () => {
    b = await bench(['oai-primary', 'claude-primary']);
  });
  afterAll(() => b.close());

  it.each(APIS)(
    '$api: 3 failures in a row mark down, a success in between resets the count',
    async (a) => {
      const name = a.provider === 'openai' ? 'oai-primary' : 'claude-primary';
      const sb = b.build([{ name, provider: a.provider, cooldown: COOLDOWN }], {
        failover: { attempts: 1 },
        clock: () => 1_700_000_000_000,
      });
      const state = b.state(sb, name);
      const call = () => send(sb, a, a.api === 'chat' ? chat('x') : message('x'));
      const sim = b.upstream.deployment(name);
      sim.fail({ kind: 'status', status: 500 }, 2);
      await expect(call()).rejects.toBeInstanceOf(a.sdk.InternalServerError);
      await expect(call()).rejects.toBeInstanceOf(a.sdk.InternalServerError);
      await call(); // success: the count starts again
      sim.fail({ kind: 'status', status: 503 }, 2).fail({ kind: 'malformed' });
      await expect(call()).rejects.toBeInstanceOf(a.sdk.InternalServerError);
      await expect(call()).rejects.toBeInstanceOf(a.sdk.InternalServerError);
      expect(state.isCooling()).toBe(false);
      await expect(call()).rejects.toBeInstanceOf(a.sdk.APIError); // malformed counts too
      expect(state.cooldownRemaining).toBe(COOLDOWN);
      expect(invariantViolations(sb)).toEqual([]);
    },
  );
});

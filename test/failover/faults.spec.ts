import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { createSwitchboard } from 'nestjs-switchboard';
import { ask, askClaude, CLAUDE, GPT, requestCounts, rig, type Rig } from '../support/upstream';
import { eventually } from '../support/eventually';

const stateOf = (r: Rig, name: string, model = GPT) =>
  r.sb.deployments.get(name)!.models.get(model)!;

/** The deployment a session is pinned to, after pinning it. */
function pin(r: Rig, session: string, model = GPT): string {
  return r.sb.selectDeployment({ model, sessionId: session }).name;
}

describe('rate limits', () => {
  let r: Rig;
  // A clock that stands still: a cooldown's remaining time is exactly what the upstream asked for.
  const clock = () => 1_700_000_000_000;
  beforeEach(async () => {
    r = await rig({ openai: 3, anthropic: 2, clock });
  });
  afterEach(() => r.close());

  it('cools a model down for retry-after-ms and moves the call to another deployment', async () => {
    const name = pin(r, 's');
    r.upstream.deployment(name).fail({ kind: 'status', status: 429, retryAfterMs: 7_500 });
    const c = await r.sb.chat.completions.create(ask('limited', { session_id: 's' }));
    expect(c.choices[0]!.message.content).toContain('limited');
    const state = stateOf(r, name);
    expect(state.isCooling()).toBe(true);
    expect(state.cooldownRemaining).toBe(7_500);
    expect(pin(r, 's')).not.toBe(name); // the session moved with the call
  });

  it('reads retry-after in seconds when retry-after-ms is absent', async () => {
    const name = pin(r, 's', CLAUDE);
    r.upstream.deployment(name).fail({ kind: 'status', status: 429, retryAfter: 42 });
    const m = await r.sb.messages.create(askClaude('limited', { session_id: 's' }));
    expect(m.content).toHaveLength(1);
    expect(stateOf(r, name, CLAUDE).cooldownRemaining).toBe(42_000);
  });

  it("falls back to the model's own cooldown without a retry-after header", async () => {
    const name = pin(r, 's');
    r.upstream.deployment(name).fail({ kind: 'status', status: 429 });
    await r.sb.chat.completions.create(ask('limited', { session_id: 's' }));
    expect(stateOf(r, name).cooldownRemaining).toBe(10_000);
  });
});

describe('server errors', () => {
  let r: Rig;
  beforeEach(async () => {
    r = await rig({ openai: 3 });
  });
  afterEach(() => r.close());

  it('a deployment that answers 500 to everything costs callers no failed call', async () => {
    r.upstream.deployment('oai0').fail({ kind: 'status', status: 500 }, Infinity);
    const results = await Promise.allSettled(
      Array.from({ length: 60 }, (_, i) => r.sb.chat.completions.create(ask(`${i}`))),
    );
    expect(results.filter((x) => x.status === 'rejected')).toHaveLength(0);
    expect(r.upstream.deployment('oai0').stats.requests).toBeGreaterThan(3);
    // three consecutive 5xx marked it down, so it stops getting traffic
    expect(stateOf(r, 'oai0').isCooling()).toBe(true);
    r.upstream.deployments.forEach((d) => d.resetStats());
    await Promise.all(Array.from({ length: 30 }, () => r.sb.chat.completions.create(ask('x'))));
    expect(r.upstream.deployment('oai0').stats.requests).toBe(0);
  });

  it('a single 5xx is retried elsewhere but does not mark the model down', async () => {
    const name = pin(r, 's');
    r.upstream.deployment(name).fail({ kind: 'status', status: 503 });
    await r.sb.chat.completions.create(ask('x', { session_id: 's' }));
    expect(stateOf(r, name).isCooling()).toBe(false);
  });

  it('a 400 is not retried and does not mark down: the SDK error reaches the caller', async () => {
    const name = pin(r, 's');
    r.upstream.deployment(name).fail({ kind: 'status', status: 400, message: 'bad request' });
    await expect(
      r.sb.chat.completions.create(ask('x', { session_id: 's' })),
    ).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    expect(Object.values(requestCounts(r.upstream)).reduce((a, b) => a + b)).toBe(1);
    expect(stateOf(r, name).isCooling()).toBe(false);
  });
});

describe('connections, timeouts and aborts', () => {
  let r: Rig;
  beforeEach(async () => {
    // Long enough for any answer on a busy machine; a hang still ends within the test's time.
    r = await rig({ openai: 3, anthropic: 2, timeout: 1_500 });
  });
  afterEach(() => r.close());

  it('a timeout fails over without marking the model down', async () => {
    const name = pin(r, 's');
    r.upstream.deployment(name).fail({ kind: 'hang' });
    const c = await r.sb.chat.completions.create(ask('slow', { session_id: 's' }));
    expect(c.choices[0]!.message.content).toContain('slow');
    expect(stateOf(r, name).isCooling()).toBe(false);
  });

  it('a timeout on every attempt rejects with the SDK timeout error, nothing marked down', async () => {
    r.upstream.deployments.forEach((d) => d.fail({ kind: 'hang' }, Infinity));
    // Every deployment hangs: a short deadline of the call's own ends each attempt as the
    // deployment's would (the case above has the deployment's own).
    const soon = { timeout: 300 };
    await expect(r.sb.messages.create(askClaude('slow'), soon)).rejects.toBeInstanceOf(
      Anthropic.APIConnectionTimeoutError,
    );
    await expect(r.sb.chat.completions.create(ask('slow'), soon)).rejects.toBeInstanceOf(
      OpenAI.APIConnectionTimeoutError,
    );
    for (const d of r.sb.deployments.values()) {
      for (const m of d.models.values()) expect(m.isCooling()).toBe(false);
    }
  });

  it('a per-call timeout option overrides the deployment timeout', async () => {
    // The deployment waits 30 s, as long as the test may run: only the call's own 2 s deadline
    // ends the hang in time for the call to fail over and succeed.
    const slow = await rig({ openai: 2, timeout: 30_000 });
    try {
      const name = pin(slow, 's');
      slow.upstream.deployment(name).fail({ kind: 'hang' });
      const c = await slow.sb.chat.completions.create(ask('x', { session_id: 's' }), {
        timeout: 2_000,
        maxRetries: 0,
      });
      expect(c.choices[0]!.message.content).toContain('x');
      expect(requestCounts(slow.upstream)[name]).toBe(1);
      expect(stateOf(slow, name).isCooling()).toBe(false);
    } finally {
      await slow.close();
    }
  });

  it('a caller abort rejects with the SDK abort error: no retry, no mark down', async () => {
    const name = pin(r, 's');
    r.upstream.deployment(name).fail({ kind: 'hang' });
    const controller = new AbortController();
    const call = r.sb.chat.completions.create(ask('x', { session_id: 's' }), {
      signal: controller.signal,
    });
    await eventually(() => r.upstream.deployment(name).stats.inFlight === 1);
    controller.abort();
    await expect(call).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
    await eventually(() => r.upstream.deployment(name).stats.inFlight === 0); // connection closed
    expect(Object.values(requestCounts(r.upstream)).reduce((a, b) => a + b)).toBe(1);
    expect(stateOf(r, name).isCooling()).toBe(false);
    expect(stateOf(r, name).tpmUsage).toBe(0);
  });

  it('an already aborted signal sends nothing', async () => {
    await expect(
      r.sb.messages.create(askClaude('x'), { signal: AbortSignal.abort() }),
    ).rejects.toBeInstanceOf(Anthropic.APIUserAbortError);
    expect(Object.values(requestCounts(r.upstream)).reduce((a, b) => a + b)).toBe(0);
  });

  it('a connection reset twice in a row marks the model down and fails over', async () => {
    const name = pin(r, 's', CLAUDE);
    // The first reset, before any answer, is taken for a stale pooled socket and sent again at
    // once to the same deployment; the second is the deployment's.
    r.upstream.deployment(name).fail({ kind: 'reset' }, 2);
    const m = await r.sb.messages.create(askClaude('reset', { session_id: 's' }));
    expect(m.type).toBe('message');
    expect(r.upstream.deployment(name).stats.requests).toBe(2);
    expect(stateOf(r, name, CLAUDE).isCooling()).toBe(true);
    expect(pin(r, 's', CLAUDE)).not.toBe(name);
  });

  it('a single reset before any answer is sent again to the same deployment, no mark-down', async () => {
    const name = pin(r, 's', CLAUDE);
    r.upstream.deployment(name).fail({ kind: 'reset' });
    const m = await r.sb.messages.create(askClaude('reset', { session_id: 's' }));
    expect(m.type).toBe('message');
    expect(requestCounts(r.upstream)[name]).toBe(2);
    expect(Object.values(requestCounts(r.upstream)).reduce((a, b) => a + b)).toBe(2);
    expect(stateOf(r, name, CLAUDE).isCooling()).toBe(false);
  });

  it('a dropped stream marks the model down and the error reaches the consumer', async () => {
    for (const [api, model] of [
      ['chat', GPT],
      ['messages', CLAUDE],
    ] as const) {
      const name = pin(r, `drop-${api}`, model);
      r.upstream.deployment(name).fail({ kind: 'drop-mid-stream', afterEvents: 2 });
      const consume = async () => {
        const stream =
          api === 'chat'
            ? await r.sb.chat.completions.create(
                ask('a long answer', { stream: true, session_id: `drop-${api}` }),
              )
            : await r.sb.messages.create(
                askClaude('a long answer', { stream: true, session_id: `drop-${api}` }),
              );
        let events = 0;
        for await (const _ of stream as AsyncIterable<unknown>) events++;
        return events;
      };
      const errorClass = api === 'chat' ? OpenAI.APIConnectionError : Anthropic.APIConnectionError;
      await expect(consume()).rejects.toBeInstanceOf(errorClass);
      expect(stateOf(r, name, model).isCooling()).toBe(true);
    }
  });
});

describe('connection refused', () => {
  it('marks the model down and fails over', async () => {
    const r = await rig({ openai: 2 });
    const sb = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'gone',
          baseURL: 'http://127.0.0.1:2/openai/v1/', // nothing listens on port 2
          apiKey: 'k',
          models: [{ name: GPT, tpm: 30_000, rpm: 300 }],
        },
        {
          provider: 'openai',
          name: 'alive',
          baseURL: r.upstream.deployment('oai0').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: GPT, tpm: 30_000, rpm: 300 }],
        },
      ],
    });
    try {
      sb.selectDeployment({ model: GPT, sessionId: 'x' });
      sb.registry.sessions.set('x', 'gone');
      const c = await sb.chat.completions.create(ask('refused', { session_id: 'x' }));
      expect(c.choices[0]!.message.content).toContain('refused');
      expect(sb.deployments.get('gone')!.models.get(GPT)!.isCooling()).toBe(true);
    } finally {
      await sb.close();
      await r.close();
    }
  });
});

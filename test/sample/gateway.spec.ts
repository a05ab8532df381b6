/**
 * The sample gateway, in process on a free port, on its simulated deployments, driven by the real
 * `openai` and `@anthropic-ai/sdk` clients pointed at it.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { Switchboard } from 'nestjs-switchboard';
import { createGateway, type Gateway } from '../../sample/main';
import { Simulation } from '../../sample/simulation/simulation';
import type { SwitchboardStatus } from '../../sample/status/status.service';

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-sonnet-5';

let gateway: Gateway;
let openai: OpenAI;
let anthropic: Anthropic;
let sb: Switchboard;
let simulation: Simulation;

beforeAll(async () => {
  gateway = await createGateway({
    port: 0,
    host: '127.0.0.1',
    simulation: { latencyFactor: 0, chunkDelay: 0 },
    logger: false,
  });
  // The clients' own retries would hide what the gateway answered.
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: gateway.url, apiKey: 'unused', maxRetries: 0 });
  sb = gateway.app.get(Switchboard);
  simulation = gateway.app.get(Simulation);
});

afterAll(() => gateway?.close());

afterEach(() => {
  simulation.upstream.reset();
  for (const d of sb.deployments.values()) for (const m of d.models.values()) m.markUp();
});

/** Requests each simulated deployment received since the last reset. */
function received(): Record<string, number> {
  return Object.fromEntries(
    simulation.upstream.deployments
      .filter((d) => d.stats.requests > 0)
      .map((d) => [d.name, d.stats.requests]),
  );
}

async function status(): Promise<SwitchboardStatus> {
  const res = await fetch(`${gateway.url}/switchboard`);
  expect(res.status).toBe(200);
  return (await res.json()) as SwitchboardStatus;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: unknown) => error,
  );
}

describe('Chat Completions (openai client)', () => {
  it('answers a call', async () => {
    const completion = await openai.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'Hello, gateway!' }],
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0]?.message.content).toBe('Hello, gateway!');
    expect(completion.usage?.total_tokens).toBeGreaterThan(0);
  });

  it('streams as SSE, hiding the usage chunk the client did not ask for', async () => {
    const stream = await openai.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'one two three four' }],
      stream: true,
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(
      'one two three four',
    );
    expect(chunks.every((c) => !c.usage)).toBe(true);
  });

  it('streams the usage chunk when the client asks for it', async () => {
    const stream = await openai.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'count me' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    expect(usage?.total_tokens).toBeGreaterThan(0);
  });

  it('keeps a session on one deployment through the x-session-id header', async () => {
    for (let i = 0; i < 6; i++) {
      await openai.chat.completions.create(
        { model: GPT, messages: [{ role: 'user', content: `turn ${i}` }] },
        { headers: { 'x-session-id': 'conversation-1' } },
      );
    }
    const counts = received();
    expect(Object.values(counts)).toEqual([6]);
    const [name] = Object.keys(counts);
    expect(sb.registry.sessions.get('conversation-1')).toBe(name);
    const snapshot = await status();
    expect(snapshot.sessions.held).toBeGreaterThanOrEqual(1);
    expect(snapshot.deployments.find((d) => d.name === name)!.sessions).toBeGreaterThanOrEqual(1);
  });

  it('stops the upstream call when the client drops a stream', async () => {
    for (const d of simulation.upstream.deployments) d.chunkDelay = 30;
    try {
      const stream = await openai.chat.completions.create({
        model: GPT,
        messages: [{ role: 'user', content: 'a b c d e f g h i j k l m n o p q r s t u v w' }],
        stream: true,
      });
      for await (const _ of stream) break; // one chunk, then the client is gone
      const [busy] = simulation.upstream.deployments.filter((d) => d.stats.requests > 0);
      await busy!.whenIdle();
      expect(busy!.stats).toMatchObject({ requests: 1, ok: 0, aborted: 1 });
    } finally {
      for (const d of simulation.upstream.deployments) d.chunkDelay = 0;
    }
  });

  it('answers an invalid body with 400 in OpenAI’s error shape', async () => {
    const error = await rejection(
      openai.chat.completions.create({ model: GPT, messages: 'not a list' } as never),
    );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const e = error as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.status).toBe(400);
    expect(e.type).toBe('invalid_request_error');
    expect(e.param).toBe('messages');
    expect(received()).toEqual({}); // nothing was sent upstream
  });

  it('answers a body that is not JSON with 400 in OpenAI’s error shape', async () => {
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model": ',
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe('invalid_request_error');
    expect(typeof body.error.message).toBe('string');
  });

  it('answers an unknown model with 404 model_not_found', async () => {
    const error = await rejection(
      openai.chat.completions.create({
        model: 'gpt-9',
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
  });

  it('answers 429 with retry-after when every deployment is rate limited', async () => {
    for (const d of simulation.upstream.deployments) {
      d.fail({ kind: 'status', status: 429, retryAfterMs: 4_000 }, 10);
    }
    const error = await rejection(
      openai.chat.completions.create({ model: GPT, messages: [{ role: 'user', content: 'x' }] }),
    );
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    const e = error as InstanceType<typeof OpenAI.RateLimitError>;
    expect(e.status).toBe(429);
    expect(e.code).toBe('rate_limit_exceeded');
    const seconds = Number(e.headers?.get('retry-after'));
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(seconds).toBeLessThanOrEqual(4);
    // The three deployments were tried, and are cooling down.
    expect(received()).toEqual({ 'aoai-eastus': 1, 'aoai-westus': 1, 'aoai-sweden': 1 });
    const snapshot = await status();
    const cooling = snapshot.deployments.filter((d) => d.models[0]!.cooling).map((d) => d.name);
    expect(cooling).toEqual(['aoai-eastus', 'aoai-westus', 'aoai-sweden']);
  });

  it('ends a stream that breaks after its first events with an error event', async () => {
    for (const d of simulation.upstream.deployments) d.fail({ kind: 'drop-mid-stream' }, 10);
    const stream = await openai.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'a long enough answer to be cut short' }],
      stream: true,
    });
    const error = await rejection(
      (async () => {
        for await (const _ of stream) {
          // drain
        }
      })(),
    );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(String((error as Error).message)).toMatch(/could not be reached/);
  });
});

describe('Messages (@anthropic-ai/sdk client)', () => {
  it('answers a call', async () => {
    const message = await anthropic.messages.create({
      model: CLAUDE,
      max_tokens: 256,
      messages: [{ role: 'user', content: 'Hello, Claude!' }],
    });
    expect(message.type).toBe('message');
    expect(message.content[0]).toMatchObject({ type: 'text', text: 'Hello, Claude!' });
  });

  it('streams as SSE with event lines', async () => {
    const stream = await anthropic.messages.create({
      model: CLAUDE,
      max_tokens: 256,
      messages: [{ role: 'user', content: 'stream me please' }],
      stream: true,
    });
    const types: string[] = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') {
        text += event.delta.text;
      }
    }
    expect(types[0]).toBe('message_start');
    expect(types.at(-1)).toBe('message_stop');
    expect(text).toBe('stream me please');

    // The helper that needs `event:` lines to assemble the message works too.
    const final = await anthropic.messages
      .stream({ model: CLAUDE, max_tokens: 256, messages: [{ role: 'user', content: 'again' }] })
      .finalMessage();
    expect(final.content[0]).toMatchObject({ type: 'text', text: 'again' });
  });

  it('keeps a session on one deployment through the x-session-id header', async () => {
    for (let i = 0; i < 4; i++) {
      await anthropic.messages.create(
        { model: CLAUDE, max_tokens: 64, messages: [{ role: 'user', content: `turn ${i}` }] },
        { headers: { 'x-session-id': 'claude-conversation' } },
      );
    }
    expect(Object.values(received())).toEqual([4]);
  });

  it('answers an invalid body with 400 in Anthropic’s error shape', async () => {
    const error = await rejection(
      anthropic.messages.create({
        model: CLAUDE,
        messages: [{ role: 'user', content: 'x' }],
      } as never),
    );
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    const e = error as InstanceType<typeof Anthropic.BadRequestError>;
    expect(e.status).toBe(400);
    expect(e.error).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens: Field required' },
    });
    expect(received()).toEqual({});
  });

  it('answers a body that is not JSON with 400 in Anthropic’s error shape', async () => {
    const res = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{oops',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error' },
    });
  });

  it('refuses a chat model on the Messages API', async () => {
    const error = await rejection(
      anthropic.messages.create({
        model: GPT,
        max_tokens: 64,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as Error).message).toMatch(/\/v1\/chat\/completions/);
  });

  it('answers 429 with retry-after when every deployment is rate limited', async () => {
    for (const d of simulation.upstream.deployments) {
      d.fail({ kind: 'status', status: 429, retryAfter: 2 }, 10);
    }
    const error = await rejection(
      anthropic.messages.create({
        model: CLAUDE,
        max_tokens: 64,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    const e = error as InstanceType<typeof Anthropic.RateLimitError>;
    expect(e.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    expect(Number(e.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(e.headers?.get('retry-after'))).toBeLessThanOrEqual(2);
  });
});

describe('health, metrics and state', () => {
  it('GET /health answers 200 while any model is served (one down is named), 503 once none is', async () => {
    const up = await fetch(`${gateway.url}/health`);
    expect(up.status).toBe(200);
    expect(await up.json()).toMatchObject({
      status: 'ok',
      info: { switchboard: { status: 'up', models: { [GPT]: { healthy: 3, total: 3 } } } },
    });

    for (const d of sb.deployments.values()) d.models.get(GPT)?.markDown(60_000);
    const oneDown = await fetch(`${gateway.url}/health`);
    expect(oneDown.status).toBe(200);
    expect(await oneDown.json()).toMatchObject({
      info: {
        switchboard: {
          status: 'up',
          models: { [GPT]: { healthy: 0 } },
          message: expect.stringContaining(`no healthy deployment for ${GPT}`),
        },
      },
    });

    for (const d of sb.deployments.values()) for (const m of d.models.values()) m.markDown(60_000);
    const down = await fetch(`${gateway.url}/health`);
    expect(down.status).toBe(503);
    const body = (await down.json()) as {
      status: string;
      error: { switchboard: { status: string; models: Record<string, { healthy: number }> } };
    };
    expect(body.status).toBe('error');
    expect(body.error.switchboard.status).toBe('down');
    expect(body.error.switchboard.models[GPT]!.healthy).toBe(0);

    for (const d of sb.deployments.values()) for (const m of d.models.values()) m.markUp();
    expect((await fetch(`${gateway.url}/health`)).status).toBe(200);
  });

  it('GET /metrics serves the requests counter in Prometheus text', async () => {
    await openai.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'm' }],
    });
    const res = await fetch(`${gateway.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toMatch(/# TYPE switchboard_requests_total counter/);
    expect(text).toMatch(
      /switchboard_requests_total\{[^}]*model="gpt-4o-mini"[^}]*deployment="aoai-/,
    );
    expect(text).toMatch(/switchboard_healthy_deployments\{[^}]*model="claude-sonnet-5"/);
    // The gateway's own counter, through nestjs-otel's MetricService.
    expect(text).toMatch(/gateway_requests_total\{[^}]*api="openai"[^}]*status="200"[^}]*\} [1-9]/);
  });

  it('GET /switchboard lists deployments, models, utilization, cooldowns and sessions', async () => {
    await openai.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 's' }],
    });
    sb.deployments.get('foundry-eastus')!.models.get(CLAUDE)!.markDown(5_000);
    const snapshot = await status();
    expect(snapshot.simulated).toBe(true);
    expect(snapshot.deployments.map((d) => [d.name, d.provider])).toEqual([
      ['aoai-eastus', 'openai'],
      ['aoai-westus', 'openai'],
      ['aoai-sweden', 'openai'],
      ['foundry-eastus', 'anthropic'],
      ['foundry-sweden', 'anthropic'],
    ]);
    expect(snapshot.models).toEqual([
      expect.objectContaining({ name: GPT, provider: 'openai', healthy: 3, total: 3 }),
      expect.objectContaining({ name: CLAUDE, provider: 'anthropic', healthy: 1, total: 2 }),
    ]);
    const foundry = snapshot.deployments[3]!.models[0]!;
    expect(foundry).toMatchObject({ name: CLAUDE, cooling: true, healthy: false, util: 1 });
    expect(foundry.cooldownRemaining).toBeGreaterThan(4_000);
    expect(foundry.cooldownRemaining).toBeLessThanOrEqual(5_000);
    const used = snapshot.deployments.flatMap((d) => d.models).filter((m) => m.rpm.used > 0);
    expect(used.length).toBeGreaterThan(0);
    expect(used[0]!.rpm.limit).toBe(60);
    expect(used[0]!.tpm.limit).toBe(8_000);
    expect(snapshot.requests.total).toBe(
      snapshot.deployments.flatMap((d) => d.models).reduce((n, m) => n + m.requests, 0),
    );
    expect(snapshot.stats['aoai-eastus']![GPT]).toEqual(
      expect.objectContaining({ tpm: expect.stringMatching(/\/8000$/) }),
    );
  });

  it('POST /switchboard/deployments/:name/mark-down cools a simulated deployment', async () => {
    const res = await fetch(`${gateway.url}/switchboard/deployments/aoai-westus/mark-down`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ms: 3_000 }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      name: 'aoai-westus',
      models: [{ name: GPT, cooling: true }],
    });
    expect(sb.deployments.get('aoai-westus')!.models.get(GPT)!.isCooling()).toBe(true);

    const unknown = await fetch(`${gateway.url}/switchboard/deployments/nope/mark-down`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(unknown.status).toBe(404);
  });

  it('GET / serves the status page from the gateway itself', async () => {
    const res = await fetch(`${gateway.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toContain("connect-src 'self'");
    const html = await res.text();
    expect(html).toContain('<table id="deployments">');
    expect(html).not.toMatch(/https?:\/\//);
    for (const asset of ['status.css', 'status.js']) {
      const r = await fetch(`${gateway.url}/${asset}`);
      expect(r.status).toBe(200);
      expect(await r.text()).not.toMatch(/https?:\/\//);
    }
  });
});

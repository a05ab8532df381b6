import { metrics } from '@opentelemetry/api';
import { MeterProvider, type DataPoint } from '@opentelemetry/sdk-metrics';
import { RateLimitError } from 'openai';
import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import { METER_NAME } from 'nestjs-switchboard/extend';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { FakeClock, seeded } from '../support/random';
import '../support/quiet-logs';
import { TestReader } from '../support/metric-reader';

const BIG = 'gpt-4o';
const SMALL = 'gpt-4o-mini';
const CLAUDE = 'claude-opus-5';
const HAIKU = 'claude-haiku-5';

describe('model fallbacks', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard;
  let clock: FakeClock;
  let reader: TestReader;
  let provider: MeterProvider;
  const debug: string[] = [];

  beforeEach(async () => {
    reader = new TestReader();
    provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
    clock = new FakeClock();
    debug.length = 0;
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'big' }, { name: 'small' }, { name: 'opus' }, { name: 'haiku' }],
    });
    sb = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'big',
          baseURL: upstream.deployment('big').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: BIG, cooldown: 30_000 }],
        },
        {
          provider: 'openai',
          name: 'small',
          baseURL: upstream.deployment('small').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: SMALL }],
        },
        {
          provider: 'anthropic',
          name: 'opus',
          baseURL: upstream.deployment('opus').anthropicBaseURL,
          apiKey: 'k',
          models: [{ name: CLAUDE }],
        },
        {
          provider: 'anthropic',
          name: 'haiku',
          baseURL: upstream.deployment('haiku').anthropicBaseURL,
          apiKey: 'k',
          models: [{ name: HAIKU }],
        },
      ],
      fallbacks: { [BIG]: [SMALL], [CLAUDE]: [HAIKU] },
      clock: clock.now,
      random: seeded(1),
      logger: {
        log: () => {},
        warn: () => {},
        error: () => {},
        debug: (message: unknown) => debug.push(String(message)),
      },
    });
  });
  afterEach(async () => {
    await sb.close();
    await upstream.close();
    await provider.shutdown();
    metrics.disable();
  });

  const ask = (extra: object = {}) =>
    sb.chat.completions.create({
      model: BIG,
      messages: [{ role: 'user', content: 'hello' }],
      ...extra,
    });
  const requests = (name: string) => upstream.deployment(name).stats.requests;
  const rateLimitAlways = (name: string) =>
    upstream.deployment(name).fail({ kind: 'status', status: 429, retryAfterMs: 20_000 }, 10_000);

  it('sends nothing to the fallback while the primary is healthy', async () => {
    const replies = await Promise.all(Array.from({ length: 50 }, () => ask()));
    expect(replies.every((r) => r.model === BIG)).toBe(true);
    expect(requests('big')).toBe(50);
    expect(requests('small')).toBe(0);
    expect(debug).toEqual([]);
  });

  it('answers every call from the fallback while the primary is rate limited, and calls the primary only once per cooldown', async () => {
    rateLimitAlways('big');
    const first = await ask();
    expect(first.model).toBe(SMALL);
    // The first call met the 429 and failed over to the fallback; the primary now cools 20 s.
    expect(requests('big')).toBe(1);
    const replies = await Promise.all(Array.from({ length: 40 }, () => ask()));
    expect(replies.every((r) => r.model === SMALL)).toBe(true);
    expect(requests('big')).toBe(1);
    expect(requests('small')).toBe(41);
    // The upstream saw the fallback's own name in the params.
    expect(upstream.deployment('small').requests.every((r) => r.model === SMALL)).toBe(true);
    expect(
      debug.some((m) =>
        /No deployment of gpt-4o can take the call: falling back to gpt-4o-mini on small/.test(m),
      ),
    ).toBe(true);

    // The cooldown over, the primary is asked again; still limited, so back to the fallback.
    clock.advance(20_001);
    expect((await ask()).model).toBe(SMALL);
    expect(requests('big')).toBe(2);

    const { resourceMetrics } = await reader.collect();
    const points = Object.fromEntries(
      resourceMetrics.scopeMetrics
        .filter((s) => s.scope.name === METER_NAME)
        .flatMap((s) => s.metrics)
        .map((m) => [
          m.descriptor.name.replace(/^switchboard\./, ''),
          m.dataPoints as DataPoint<number>[],
        ]),
    );
    expect(
      points.fallbacks!.filter((p) => p.value !== 0).map((p) => [p.attributes, p.value]),
    ).toEqual([
      [
        {
          model: BIG,
          fallback: SMALL,
          deployment: 'small',
          reason: 'unavailable',
          translated: 'false',
        },
        42,
      ],
    ]);
    expect(points.requests!.find((p) => p.attributes.fallback === SMALL)?.attributes).toEqual({
      model: BIG,
      deployment: 'small',
      fallback: SMALL,
    });
  });

  it('brings a session back to its own model once that recovers', async () => {
    const state = sb.deployments.get('big')!.models.get(BIG)!;
    state.markDown(5_000);
    expect((await ask({ session_id: 's' })).model).toBe(SMALL);
    expect(sb.registry.sessions.get('s')).toBe('small');
    expect((await ask({ session_id: 's' })).model).toBe(SMALL);
    clock.advance(5_001);
    expect((await ask({ session_id: 's' })).model).toBe(BIG);
    expect(sb.registry.sessions.get('s')).toBe('big');
  });

  it('goes to the fallback when the requested model has no room by its quota', async () => {
    const full = createSwitchboard({
      deployments: [...sb.deployments.values()].slice(0, 2).map((d) => ({
        provider: 'openai' as const,
        name: d.name,
        baseURL: upstream.deployment(d.name).openaiBaseURL,
        apiKey: 'k',
        models: [{ name: d.name === 'big' ? BIG : SMALL, rpm: d.name === 'big' ? 2 : 0 }],
      })),
      fallbacks: { [BIG]: [SMALL] },
      ratelimitWindow: 0,
    });
    try {
      const models: string[] = [];
      for (let i = 0; i < 4; i++) {
        const r = await full.chat.completions.create({
          model: BIG,
          messages: [{ role: 'user', content: 'x' }],
        });
        models.push(r.model);
      }
      expect(models).toEqual([BIG, BIG, SMALL, SMALL]);
      expect(upstream.deployment('big').stats.requests).toBe(2);
    } finally {
      await full.close();
    }
  });

  it('goes to the fallback once every deployment of the requested model failed for this call', async () => {
    const two = createSwitchboard({
      deployments: [
        ...['big', 'opus'].map((name) => ({
          provider: 'openai' as const,
          name,
          baseURL: upstream.deployment(name).openaiBaseURL,
          apiKey: 'k',
          models: [{ name: BIG }],
        })),
        {
          provider: 'openai',
          name: 'small',
          baseURL: upstream.deployment('small').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: SMALL }],
        },
      ],
      fallbacks: { [BIG]: [SMALL] },
      failover: { attempts: 3 },
      ratelimitWindow: 0,
    });
    try {
      // A single 5xx marks nothing down: both stay healthy, but this call has tried them.
      upstream.deployment('big').fail({ kind: 'status', status: 500 });
      upstream.deployment('opus').fail({ kind: 'status', status: 503 });
      const reply = await two.chat.completions.create({
        model: BIG,
        messages: [{ role: 'user', content: 'x' }],
      });
      expect(reply.model).toBe(SMALL);
      expect([requests('big'), requests('opus'), requests('small')]).toEqual([1, 1, 1]);
      // The next call finds the primary healthy again.
      const next = await two.chat.completions.create({
        model: BIG,
        messages: [{ role: 'user', content: 'x' }],
      });
      expect(next.model).toBe(BIG);
    } finally {
      await two.close();
    }
  });

  it('lets a call opt out with fallbacks: false', async () => {
    rateLimitAlways('big');
    await expect(ask({ fallbacks: false })).rejects.toBeInstanceOf(RateLimitError);
    expect(requests('small')).toBe(0);
    await expect(ask({ fallbacks: 'no' })).rejects.toThrow(/fallbacks must be false/);
    // The opt-out is not sent upstream.
    expect(
      upstream.deployment('big').requests.every((r) => !('fallbacks' in (r.body as object))),
    ).toBe(true);
  });

  it('falls back for Messages calls too', async () => {
    rateLimitAlways('opus');
    const message = await sb.messages.create({
      model: CLAUDE,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(message.model).toBe(HAIKU);
    const stream = await sb.messages.create({
      model: CLAUDE,
      max_tokens: 64,
      stream: true,
      messages: [{ role: 'user', content: 'hello' }],
    });
    let model = '';
    for await (const event of stream)
      if (event.type === 'message_start') model = event.message.model;
    expect(model).toBe(HAIKU);
    expect(requests('opus')).toBe(1);
  });
});

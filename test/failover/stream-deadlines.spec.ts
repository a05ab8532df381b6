import { metrics } from '@opentelemetry/api';
import { MeterProvider, type DataPoint } from '@opentelemetry/sdk-metrics';
import OpenAI from 'openai';
import { createSwitchboard, type Switchboard, type SwitchboardOptions } from 'nestjs-switchboard';
import { METER_NAME } from 'nestjs-switchboard/extend';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { TestReader } from '../support/metric-reader';
import '../support/quiet-logs';

const GPT = 'gpt-4o-mini';
const PROMPT = 'one two three four five six';

/**
 * The switchboard's deadlines and the simulated deployments' stalls run on Jest's fake timers; the
 * sockets between them are real, so each step waits for what the upstream observed (requests,
 * statuses, closed connections), never for time to pass.
 */
describe('stream deadlines', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard;
  let reader: TestReader;
  let provider: MeterProvider;

  async function start(options: Partial<SwitchboardOptions>, west = true): Promise<void> {
    upstream = await SimulatedUpstream.start({ deployments: [{ name: 'east' }, { name: 'west' }] });
    sb = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: upstream.deployment('east').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: GPT, tpm: 1_000_000 }],
        },
        ...(west
          ? [
              {
                provider: 'openai' as const,
                name: 'west',
                baseURL: upstream.deployment('west').openaiBaseURL,
                apiKey: 'k',
                // The lower tier: every call tries east first.
                priority: 1,
                models: [{ name: GPT, tpm: 1_000_000 }],
              },
            ]
          : []),
      ],
      ...options,
    });
  }

  beforeEach(() => {
    reader = new TestReader();
    provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
  });
  afterEach(async () => {
    jest.useRealTimers();
    await sb.close();
    await upstream.close();
    await provider.shutdown();
    metrics.disable();
  });

  const stream = () =>
    sb.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: PROMPT }],
      stream: true,
    });
  const text = async (s: AsyncIterable<OpenAI.ChatCompletionChunk>): Promise<string> => {
    let out = '';
    for await (const chunk of s) out += chunk.choices[0]?.delta.content ?? '';
    return out;
  };

  it('firstTokenTimeout: streams that stall after their headers fail over and complete; the stalled connections are closed, nothing cooled', async () => {
    await start({ firstTokenTimeout: 500 });
    const east = upstream.deployment('east');
    const west = upstream.deployment('west');
    // Headers, then nothing for 5 s.
    east.fail({ kind: 'stall', ms: 5_000 }, Infinity);
    const calls = Array.from({ length: 10 }, () => stream());
    // Every stall has begun: east has sent each call's headers.
    await east.waitFor((d) => d.stats.byStatus[200] === 10);
    await jest.advanceTimersByTimeAsync(500);
    const texts = await Promise.all(calls.map(async (c) => text(await c)));
    expect(texts).toEqual(Array.from({ length: 10 }, () => PROMPT));
    await east.whenIdle();
    // Each of east's connections was closed by the switchboard, before its stall could end.
    expect(east.stats).toMatchObject({ requests: 10, ok: 0, aborted: 10 });
    expect(west.stats).toMatchObject({ requests: 10, ok: 10 });
    const state = sb.deployments.get('east')!.models.get(GPT)!;
    expect(state.isCooling()).toBe(false);
    // Its tokens were given back; its requests still count.
    expect(state.tpmUsage).toBe(0);
    expect(state.rpmUsage).toBe(10);
    expect(state.inFlight.count).toBe(0);
    const retries = await points(reader, 'switchboard.retries');
    expect(
      retries.find(
        (p) => p.attributes.deployment === 'east' && p.attributes.reason === 'first_token_timeout',
      )?.value,
    ).toBe(10);
  });

  it('firstTokenTimeout: a stream whose first event comes before the deadline is untouched', async () => {
    await start({ firstTokenTimeout: 1_000 });
    const east = upstream.deployment('east');
    east.fail({ kind: 'stall', ms: 400 });
    const call = stream();
    await east.waitFor((d) => d.stats.byStatus[200] === 1);
    await jest.advanceTimersByTimeAsync(400);
    const s = await call;
    await jest.advanceTimersByTimeAsync(2_000);
    expect(await text(s)).toBe(PROMPT);
    expect(east.stats).toMatchObject({ requests: 1, ok: 1, aborted: 0 });
    expect(upstream.deployment('west').stats.requests).toBe(0);
  });

  it('firstTokenTimeout: a stream with no headers by the deadline is aborted and fails over too', async () => {
    await start({ firstTokenTimeout: 500 });
    const east = upstream.deployment('east');
    east.fail({ kind: 'hang' });
    const call = stream();
    await east.waitFor((d) => d.stats.inFlight === 1);
    await jest.advanceTimersByTimeAsync(500);
    expect(await text(await call)).toBe(PROMPT);
    await east.whenIdle();
    expect(east.stats).toMatchObject({ requests: 1, aborted: 1 });
  });

  it('a model’s own firstTokenTimeout wins over the switchboard’s', async () => {
    upstream = await SimulatedUpstream.start({ deployments: [{ name: 'east' }] });
    sb = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: upstream.deployment('east').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: GPT, firstTokenTimeout: 5_000 }],
        },
      ],
      firstTokenTimeout: 500,
    });
    const east = upstream.deployment('east');
    east.fail({ kind: 'stall', ms: 2_000 });
    const call = stream();
    await east.waitFor((d) => d.stats.byStatus[200] === 1);
    await jest.advanceTimersByTimeAsync(2_000);
    expect(await text(await call)).toBe(PROMPT);
    expect(east.stats).toMatchObject({ requests: 1, ok: 1, aborted: 0 });
  });

  it('streamIdleTimeout: a stream that stalls after two events throws, is not replayed, and frees its slot', async () => {
    upstream = await SimulatedUpstream.start({ deployments: [{ name: 'east' }] });
    const east = upstream.deployment('east');
    sb = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: east.openaiBaseURL,
          apiKey: 'k',
          maxInFlight: 1,
          models: [{ name: GPT }],
        },
      ],
      streamIdleTimeout: 1_000,
    });
    east.fail({ kind: 'stall', afterEvents: 2, ms: 5_000 });
    const s = await stream();
    const seen: unknown[] = [];
    let twoSeen!: () => void;
    const two = new Promise<void>((resolve) => (twoSeen = resolve));
    const consumed = (async () => {
      for await (const chunk of s) {
        seen.push(chunk);
        if (seen.length === 2) twoSeen();
      }
    })();
    const outcome = consumed.then(
      () => undefined,
      (error: unknown) => error,
    );
    await two;
    await jest.advanceTimersByTimeAsync(1_000);
    const error = await outcome;
    expect(error).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    expect((error as Error).message).toMatch(/no stream event for 1000 ms \(streamIdleTimeout\)/);
    expect(seen).toHaveLength(2);
    await east.whenIdle();
    expect(east.stats).toMatchObject({ requests: 1, aborted: 1 });
    const state = sb.deployments.get('east')!.models.get(GPT)!;
    expect(state.inFlight.count).toBe(0);
    expect(state.isCooling()).toBe(false);
    // The slot is free: the next call goes to the same deployment and completes.
    expect(await text(await stream())).toBe(PROMPT);
    expect(east.stats).toMatchObject({ requests: 2, ok: 1 });
  });
});

async function points(reader: TestReader, name: string): Promise<DataPoint<number>[]> {
  const { resourceMetrics } = await reader.collect();
  return resourceMetrics.scopeMetrics
    .filter((s) => s.scope.name === METER_NAME)
    .flatMap((s) => s.metrics)
    .filter((m) => m.descriptor.name === name)
    .flatMap((m) => m.dataPoints as DataPoint<number>[]);
}

import { metrics } from '@opentelemetry/api';
import { MeterProvider, type DataPoint } from '@opentelemetry/sdk-metrics';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { type BadRequestError } from 'openai';
import {
  createSwitchboard,
  SwitchboardError,
  type DeploymentConfig,
  type Switchboard,
  type SwitchboardOptions,
} from 'nestjs-switchboard';
import { METER_NAME } from 'nestjs-switchboard/extend';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { TestReader } from '../support/metric-reader';
import '../support/quiet-logs';

const SMALL = 'gpt-4o-mini';
const LARGE = 'gpt-4o';
const HAIKU = 'claude-haiku-5';
const OPUS = 'claude-opus-5';

/** About `tokens` prompt tokens, by the switchboard's and the simulator's estimate (4 chars each). */
const prompt = (tokens: number) => 'word '.repeat(Math.ceil((tokens * 4) / 5));

describe('calls a model refuses for what they are', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard;
  let reader: TestReader;
  let provider: MeterProvider;

  /** small1 and small2 serve the small model (8 000-token window upstream), large the large one. */
  async function start(options: Partial<SwitchboardOptions>, windows = true): Promise<void> {
    upstream = await SimulatedUpstream.start({
      deployments: [
        { name: 'small1', contextWindow: 8_000 },
        { name: 'small2', contextWindow: 8_000 },
        { name: 'large', contextWindow: 128_000 },
        { name: 'haiku', contextWindow: 8_000 },
        { name: 'opus', contextWindow: 200_000 },
      ],
    });
    const openai = (name: string, model: string, window: number): DeploymentConfig => ({
      provider: 'openai',
      name,
      baseURL: upstream.deployment(name).openaiBaseURL,
      apiKey: 'k',
      models: [{ name: model, ...(windows ? { contextWindow: window } : {}) }],
    });
    const anthropic = (name: string, model: string, window: number): DeploymentConfig => ({
      provider: 'anthropic',
      name,
      baseURL: upstream.deployment(name).anthropicBaseURL,
      apiKey: 'k',
      models: [{ name: model, ...(windows ? { contextWindow: window } : {}) }],
    });
    sb = createSwitchboard({
      deployments: [
        openai('small1', SMALL, 8_000),
        openai('small2', SMALL, 8_000),
        openai('large', LARGE, 128_000),
        anthropic('haiku', HAIKU, 8_000),
        anthropic('opus', OPUS, 200_000),
      ],
      ...options,
    });
  }

  beforeEach(() => {
    reader = new TestReader();
    provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
  });
  afterEach(async () => {
    await sb.close();
    await upstream.close();
    await provider.shutdown();
    metrics.disable();
  });

  const requests = (name: string) => upstream.deployment(name).stats.requests;
  const ask = (content: string, extra: object = {}) =>
    sb.chat.completions.create({
      model: SMALL,
      messages: [{ role: 'user', content }],
      max_tokens: 100,
      ...extra,
    });
  const fallbackPoints = async () =>
    (await points(reader, 'switchboard.fallbacks'))
      .filter((p) => p.value !== 0)
      .map((p) => [p.attributes, p.value]);

  describe('context window', () => {
    it('a prompt beyond the window goes to the fallback whose window holds it; nothing is sent to the small model', async () => {
      await start({ fallbacks: { [SMALL]: [LARGE], [HAIKU]: [OPUS] } });
      const answer = await ask(prompt(20_000));
      expect(answer.model).toBe(LARGE);
      expect(requests('small1') + requests('small2')).toBe(0);
      expect(requests('large')).toBe(1);
      // The Anthropic side alike.
      const message = await sb.messages.create({
        model: HAIKU,
        max_tokens: 100,
        messages: [{ role: 'user', content: prompt(20_000) }],
      });
      expect(message.model).toBe(OPUS);
      expect(requests('haiku')).toBe(0);
      expect(await fallbackPoints()).toEqual([
        [
          {
            model: SMALL,
            fallback: LARGE,
            deployment: 'large',
            reason: 'context_window',
            translated: 'false',
          },
          1,
        ],
        [
          {
            model: HAIKU,
            fallback: OPUS,
            deployment: 'opus',
            reason: 'context_window',
            translated: 'false',
          },
          1,
        ],
      ]);
      // A call that fits stays on its model.
      expect((await ask('short')).model).toBe(SMALL);
    });

    it('too large for every model: a SwitchboardError with the sizes, nothing sent', async () => {
      await start({ fallbacks: { [SMALL]: [LARGE] } });
      const error = await ask(prompt(200_000)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SwitchboardError);
      expect((error as SwitchboardError).status).toBe(400);
      expect((error as Error).message).toMatch(
        /gpt-4o-mini needs about 200100 tokens \(200000 prompt estimate \+ 100 max_tokens\), more than its context window of 8000 and than its fallbacks' \(gpt-4o: 128000\)/,
      );
      expect(upstream.deployments.reduce((n, d) => n + d.stats.requests, 0)).toBe(0);
    });

    it('without a window configured, the 400 moves the call to the fallback: one request to the small model, nothing marked down', async () => {
      await start({ fallbacks: { [SMALL]: [LARGE], [HAIKU]: [OPUS] } }, false);
      const answer = await ask(prompt(20_000));
      expect(answer.model).toBe(LARGE);
      // One of the two small deployments answered 400; the other was not tried.
      expect(requests('small1') + requests('small2')).toBe(1);
      expect(upstream.deployment('small1').stats.byStatus[400] ?? 0).toBe(requests('small1'));
      for (const name of ['small1', 'small2']) {
        expect(sb.deployments.get(name)!.models.get(SMALL)!.isCooling()).toBe(false);
      }
      // Anthropic's "prompt is too long" alike.
      const message = await sb.messages.create({
        model: HAIKU,
        max_tokens: 100,
        messages: [{ role: 'user', content: prompt(20_000) }],
      });
      expect(message.model).toBe(OPUS);
      expect(upstream.deployment('haiku').stats.byStatus[400]).toBe(1);
      // Small calls still go to the small model.
      expect((await ask('short')).model).toBe(SMALL);
      expect(requests('small1') + requests('small2')).toBe(2);
      expect(await fallbackPoints()).toEqual([
        [
          {
            model: SMALL,
            fallback: LARGE,
            deployment: 'large',
            reason: 'context_window',
            translated: 'false',
          },
          1,
        ],
        [
          {
            model: HAIKU,
            fallback: OPUS,
            deployment: 'opus',
            reason: 'context_window',
            translated: 'false',
          },
          1,
        ],
      ]);
    });

    it('without a fallback, the upstream’s 400 is the caller’s, after one request', async () => {
      await start({}, false);
      const error = await ask(prompt(20_000)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as BadRequestError).code).toBe('context_length_exceeded');
      expect(requests('small1') + requests('small2')).toBe(1);
      const claude = await sb.messages
        .create({
          model: HAIKU,
          max_tokens: 100,
          messages: [{ role: 'user', content: prompt(20_000) }],
        })
        .catch((e: unknown) => e);
      expect(claude).toBeInstanceOf(Anthropic.BadRequestError);
    });

    it('a call with fallbacks: false does not leave its model', async () => {
      await start({ fallbacks: { [SMALL]: [LARGE] } });
      await expect(ask(prompt(20_000), { fallbacks: false })).rejects.toBeInstanceOf(
        SwitchboardError,
      );
      expect(upstream.deployments.reduce((n, d) => n + d.stats.requests, 0)).toBe(0);
    });
  });

  describe('content filter', () => {
    it('a filtered prompt goes to the content-filter fallback; the next call still goes to the filtering deployment', async () => {
      await start({ contentFilterFallbacks: { [LARGE]: [SMALL] } }, false);
      const large = upstream.deployment('large');
      large.fail({ kind: 'content-filter', category: 'violence' });
      const ask4o = () =>
        sb.chat.completions.create({ model: LARGE, messages: [{ role: 'user', content: 'x' }] });
      const answer = await ask4o();
      expect(answer.model).toBe(SMALL);
      expect(large.stats.byStatus[400]).toBe(1);
      expect(sb.deployments.get('large')!.models.get(LARGE)!.isCooling()).toBe(false);
      expect((await ask4o()).model).toBe(LARGE);
      expect(large.stats.requests).toBe(2);
      expect(await fallbackPoints()).toEqual([
        [
          {
            model: LARGE,
            fallback: SMALL,
            deployment: expect.any(String),
            reason: 'content_filter',
            translated: 'false',
          },
          1,
        ],
      ]);
    });

    it('an answer the filter withheld (finish_reason content_filter) goes to the fallback too', async () => {
      await start({ contentFilterFallbacks: { [LARGE]: [SMALL] } }, false);
      const large = upstream.deployment('large');
      large.fail({ kind: 'content-filter', on: 'completion' });
      const answer = await sb.chat.completions.create({
        model: LARGE,
        messages: [{ role: 'user', content: 'tell me' }],
      });
      expect(answer.model).toBe(SMALL);
      expect(answer.choices[0]!.finish_reason).toBe('stop');
      expect(answer.choices[0]!.message.content).toBe('tell me');
      expect(large.stats.requests).toBe(1);
    });

    it('without a fallback: the SDK’s BadRequestError with Azure’s innererror intact, after exactly one request', async () => {
      await start({}, false);
      const large = upstream.deployment('large');
      large.fail({ kind: 'content-filter', category: 'self_harm' });
      const error = (await sb.chat.completions
        .create({ model: LARGE, messages: [{ role: 'user', content: 'x' }] })
        .catch((e: unknown) => e)) as BadRequestError;
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error.code).toBe('content_filter');
      expect(error.error).toMatchObject({
        code: 'content_filter',
        param: 'prompt',
        innererror: {
          code: 'ResponsibleAIPolicyViolation',
          content_filter_result: {
            self_harm: { filtered: true, severity: 'high' },
            hate: { filtered: false, severity: 'safe' },
          },
        },
      });
      expect(large.stats.requests).toBe(1);
      expect(sb.deployments.get('large')!.models.get(LARGE)!.isCooling()).toBe(false);
    });
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

describe('configuration of the refusals and stream deadlines', () => {
  const openai = (name: string, models: object[]) => ({
    provider: 'openai' as const,
    name,
    baseURL: `http://127.0.0.1:2/${name}/`,
    apiKey: 'k',
    models: models as { name: string }[],
  });

  it('a model has one context window on every deployment', () => {
    expect(() =>
      createSwitchboard({
        deployments: [
          openai('a', [{ name: SMALL, contextWindow: 8_000 }]),
          openai('b', [{ name: SMALL, contextWindow: 16_000 }]),
        ],
      }),
    ).toThrow(
      /deployments\[1\]\.models\[0\]\.contextWindow is 16000 but deployments\[0\]\.models\[0\]\.contextWindow is 8000/,
    );
  });

  it('content-filter fallbacks name served models of the same API, never the model itself', () => {
    expect(() =>
      createSwitchboard({
        deployments: [openai('a', [{ name: SMALL }, { name: LARGE }])],
        contentFilterFallbacks: { [LARGE]: [LARGE, 'o9'] },
      }),
    ).toThrow(
      /contentFilterFallbacks\.gpt-4o\[1\] 'o9' is served by no deployment.*contentFilterFallbacks\.gpt-4o\[0\] 'gpt-4o' names itself/,
    );
  });

  it('the stream deadlines are positive milliseconds', () => {
    expect(() =>
      createSwitchboard({ deployments: [openai('a', [{ name: SMALL }])], firstTokenTimeout: 0 }),
    ).toThrow(/firstTokenTimeout must be a positive number of milliseconds/);
    expect(() =>
      createSwitchboard({
        deployments: [openai('a', [{ name: SMALL, streamIdleTimeout: -5 }])],
      }),
    ).toThrow(/models\[0\]\.streamIdleTimeout must be a positive number of milliseconds/);
  });

  it('the simulated faults check their settings', async () => {
    const upstream = await SimulatedUpstream.start({ deployments: [{ name: 'a' }] });
    try {
      const a = upstream.deployment('a');
      expect(() => a.fail({ kind: 'stall', ms: -1 })).toThrow(RangeError);
      expect(() => a.fail({ kind: 'content-filter', category: 'rude' as 'hate' })).toThrow(
        /category must be one of hate, self_harm, sexual, violence/,
      );
    } finally {
      await upstream.close();
    }
  });
});

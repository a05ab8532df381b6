import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import {
  createSwitchboard,
  SwitchboardHealthIndicator,
  type Switchboard,
} from 'nestjs-switchboard';
import {
  bench,
  chat,
  CLAUDE,
  flushRejections,
  GPT,
  message,
  recordUnhandled,
  textOf,
  type Bench,
  type Spec,
  type UnhandledRecorder,
} from './harness';

/**
 * API keys (strings and token functions, both providers) must not show anywhere the switchboard
 * writes or answers: log lines (and what the SDKs print to the console), error messages and
 * everything an error carries, `stats()`, health details, deployments as printed or serialized,
 * and metric attributes. One run goes through every error path, then everything is scanned.
 */
const secret = (prefix: string) => `${prefix}-${randomBytes(16).toString('hex')}`;
const KEYS = {
  'oai-key': secret('sk-live'),
  'oai-token': secret('eyJ-entra-openai'),
  'oai-wrong': secret('sk-wrong'),
  'oai-dead': secret('sk-dead'),
  'claude-key': secret('foundry'),
  'claude-token': secret('eyJ-entra-foundry'),
  'claude-wrong': secret('foundry-wrong'),
} as const;
type Name = keyof typeof KEYS;
/** The token functions' tokens are the secrets; the functions are what is configured. */
const TOKEN_NAMES = new Set<Name>(['oai-token', 'claude-token']);

/** Every secret, and every 12-character piece of its random part: a partial echo counts too. */
function needles(): string[] {
  const out = new Set<string>();
  for (const key of Object.values(KEYS)) {
    out.add(key);
    const core = key.slice(-32);
    for (let i = 0; i + 12 <= core.length; i++) out.add(core.slice(i, i + 12));
  }
  return [...out];
}

/** Everything an error shows or carries: message, stack, own properties, causes, headers. */
function describeError(error: unknown): string {
  return [
    String(error),
    (error as Error)?.stack ?? '',
    inspect(error, { depth: 8, showHidden: true, breakLength: Infinity }),
  ].join('\n');
}

describe('secrets stay secret on every path', () => {
  let b: Bench;
  let unhandled: UnhandledRecorder;
  let exporter: InMemoryMetricExporter;
  let reader: PeriodicExportingMetricReader;
  let provider: MeterProvider;
  const logs: string[] = [];
  const errors: unknown[] = [];
  const console_: string[] = [];
  const switchboards: Switchboard[] = [];

  const logger = {
    log: (...args: unknown[]) => logs.push(args.map((a) => inspect(a)).join(' ')),
    warn: (...args: unknown[]) => logs.push(args.map((a) => inspect(a)).join(' ')),
    error: (...args: unknown[]) => logs.push(args.map((a) => inspect(a)).join(' ')),
    debug: (...args: unknown[]) => logs.push(args.map((a) => inspect(a)).join(' ')),
    verbose: (...args: unknown[]) => logs.push(args.map((a) => inspect(a)).join(' ')),
  };

  beforeAll(async () => {
    unhandled = recordUnhandled();
    // A real meter provider, registered before any switchboard is built.
    exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
    provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
    b = await bench(Object.keys(KEYS));
    for (const name of Object.keys(KEYS) as Name[]) {
      // The upstream checks the key; the wrong ones are configured with another key than it wants.
      b.upstream.deployment(name).apiKey = name.endsWith('wrong') ? secret('other') : KEYS[name];
    }
    for (const method of ['log', 'warn', 'error', 'info', 'debug'] as const) {
      jest.spyOn(console, method).mockImplementation((...args: unknown[]) => {
        console_.push(args.map((a) => inspect(a)).join(' '));
      });
    }
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await Promise.all(switchboards.map((sb) => sb.close()));
    await b.close();
    await provider.shutdown();
    metrics.disable();
    unhandled.dispose();
  });

  const spec = (name: Name): Spec => ({
    name,
    provider: name.startsWith('oai') ? 'openai' : 'anthropic',
    dead: name.endsWith('dead'),
    timeout: 500,
    apiKey: TOKEN_NAMES.has(name) ? () => Promise.resolve(KEYS[name]) : KEYS[name],
  });
  const build = (names: Name[], options: object = {}) => {
    const sb = b.build(names.map(spec), { logger, failover: { attempts: 2 }, ...options });
    switchboards.push(sb);
    return sb;
  };

  /** Runs a call (consuming a stream), recording its error; resolves either way. */
  async function attempt(run: () => Promise<unknown>): Promise<void> {
    try {
      const result = await run();
      await textOf(result);
    } catch (error) {
      errors.push(error);
    }
  }

  it('goes through every error path', async () => {
    const all = Object.keys(KEYS) as Name[];
    const sb = build(all);
    const call = (name: Name, stream: boolean, extra: object = {}, options?: object) => {
      sb.registry.sessions.set('pinned', name);
      return attempt(() =>
        name.startsWith('oai')
          ? sb.chat.completions.create(
              chat('hello', { stream, session_id: 'pinned', ...extra }) as never,
              options,
            )
          : sb.messages.create(
              message('hello', { stream, session_id: 'pinned', ...extra }) as never,
              options,
            ),
      );
    };
    const faults = [
      { kind: 'status', status: 429, retryAfter: 1 },
      { kind: 'status', status: 429 },
      { kind: 'status', status: 500 },
      { kind: 'status', status: 503 },
      { kind: 'status', status: 529 },
      { kind: 'reset' },
      { kind: 'hang' },
      { kind: 'drop-mid-stream' },
      { kind: 'malformed' },
      { kind: 'status', status: 400, message: 'bad request' },
    ] as const;
    for (const name of ['oai-key', 'oai-token', 'claude-key', 'claude-token'] as const) {
      for (const stream of [false, true]) {
        for (const fault of faults) {
          for (const d of sb.deployments.values()) for (const m of d.models.values()) m.markUp();
          b.upstream.deployment(name).fail(fault);
          await call(name, stream);
        }
        // three 5xx in a row mark down
        b.upstream.deployment(name).fail({ kind: 'status', status: 502 }, 3);
        for (let i = 0; i < 3; i++) await call(name, stream);
      }
      // authentication failures and refused connections, alone
      await call(name.startsWith('oai') ? 'oai-wrong' : 'claude-wrong', false);
      // a caller's abort, before and during the answer
      b.upstream.deployment(name).latency = 200;
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      await call(name, false, {}, { signal: controller.signal });
      b.upstream.deployment(name).latency = 0;
      await call(name, false, {}, { signal: AbortSignal.abort() });
      await call(name, false, {}, { timeout: 1 });
    }
    await call('oai-dead', false);
    await call('oai-dead', true);

    // the switchboard's own errors
    await attempt(() => sb.chat.completions.create(chat('x', { model: 'gpt-nope' }) as never));
    await attempt(() => sb.chat.completions.create(chat('x', { model: CLAUDE }) as never));
    await attempt(() => sb.messages.create(message('x', { model: GPT }) as never));
    await attempt(() => sb.chat.completions.create({ messages: [] } as never));
    await attempt(() => sb.chat.completions.create(chat('x', { session_id: 42 }) as never));
    await attempt(() => sb.chat.completions.create(null as never));
    // everything cooling (best effort), then everything down
    for (const d of sb.deployments.values()) for (const m of d.models.values()) m.markDown(60_000);
    await call('oai-key', false);
    for (const d of b.upstream.deployments) d.fail({ kind: 'status', status: 500 }, 4);
    await call('oai-key', false);
    await call('claude-key', true);
    // rate limited everywhere: the caller gets the 429
    for (const d of b.upstream.deployments)
      d.clearFaults().fail({ kind: 'status', status: 429 }, 2);
    const limited = build(['oai-key', 'oai-token', 'claude-key', 'claude-token']);
    await attempt(() => limited.chat.completions.create(chat('x') as never));
    await attempt(() => limited.messages.create(message('x', { stream: true }) as never));

    // configurations that carry the keys and are rejected
    const valid = (name: Name) => ({
      provider: 'openai',
      name,
      apiKey: KEYS[name],
      baseURL: 'https://example.openai.azure.com/openai/v1/',
      models: [{ name: GPT }],
    });
    const invalid: object[] = [
      { deployments: [{ ...valid('oai-key'), provider: KEYS['oai-key'] }] },
      { deployments: [{ ...valid('oai-key'), api_key: KEYS['oai-key'] }] },
      { deployments: [{ ...valid('oai-key'), apiKey: [KEYS['oai-key']] }] },
      { deployments: [{ ...valid('oai-key'), apiKey: { value: KEYS['oai-key'] } }] },
      { deployments: [{ ...valid('oai-key'), baseURL: KEYS['oai-key'] }] },
      { deployments: [{ ...valid('oai-key'), models: [{ name: GPT, tpm: KEYS['oai-key'] }] }] },
      { deployments: [valid('oai-key'), valid('oai-key')] },
      { deployments: [valid('oai-key'), { ...valid('claude-key'), provider: 'anthropic' }] },
      { deployments: [{ ...valid('oai-key'), timeout: -1 }], apiKey: KEYS['oai-key'] },
      { deployments: [{ ...valid('claude-key'), provider: 'anthropic', baseURL: undefined }] },
    ];
    for (const options of invalid) {
      try {
        switchboards.push(createSwitchboard(options as never));
      } catch (error) {
        errors.push(error);
      }
    }
    await flushRejections();

    // The run did go through the paths it claims to.
    const text = logs.join('\n');
    expect(text).toMatch(/marked down .*\(rate_limit\)/);
    expect(text).toMatch(/marked down .*\(connection\)/);
    expect(text).toMatch(/3 consecutive failures/);
    expect(text).toMatch(/best-effort/);
    const names = new Set(errors.map((e) => (e as Error).constructor.name));
    for (const expected of [
      'SwitchboardError',
      'AuthenticationError',
      'BadRequestError',
      'RateLimitError',
      'InternalServerError',
      'APIConnectionError',
      'APIConnectionTimeoutError',
      'APIUserAbortError',
      'APIError',
      'TypeError',
    ]) {
      expect(names).toContain(expected);
    }
    expect(unhandled.seen).toEqual([]);
  });

  it('no key in logs, console output, errors, stats, health, deployments or metrics', async () => {
    const sb = switchboards[0]!;
    await reader.forceFlush();
    const exported = exporter.getMetrics();
    const points = exported.flatMap((r) =>
      r.scopeMetrics.flatMap((s) =>
        s.metrics.flatMap((m) =>
          m.dataPoints.map((p) => ({
            metric: m.descriptor.name,
            attributes: p.attributes,
            value: p.value,
          })),
        ),
      ),
    );
    // the metrics are there, with their attributes
    expect(
      points.some(
        (p) =>
          p.metric === 'switchboard.requests' &&
          p.attributes['deployment'] === 'oai-key' &&
          p.value !== 0,
      ),
    ).toBe(true);
    expect(
      points.some(
        (p) =>
          p.metric === 'switchboard.failures' &&
          p.attributes['reason'] === 'rate_limit' &&
          p.value !== 0,
      ),
    ).toBe(true);
    expect(points.some((p) => p.metric === 'switchboard.utilization')).toBe(true);

    const health = new SwitchboardHealthIndicator(sb);
    const places: Record<string, string> = {
      logs: logs.join('\n'),
      console: console_.join('\n'),
      errors: errors.map(describeError).join('\n'),
      stats: JSON.stringify(sb.stats()),
      health: JSON.stringify([
        health.isHealthy(),
        health.isHealthy('llm', { models: [GPT, 'nope'] }),
      ]),
      state: JSON.stringify(sb.state.health()),
      deployments: JSON.stringify([...sb.deployments.values()]),
      'deployments, printed':
        inspect(sb.deployments, { depth: 8 }) +
        inspect(sb.selectDeployment({ model: GPT }), { depth: 8 }),
      'switchboard, printed': inspect(sb, { depth: 4 }),
      'metric attributes': JSON.stringify(points),
      metrics: JSON.stringify(exported),
    };
    expect(places.errors.length).toBeGreaterThan(10_000);
    // The scan can see a key: the SDK clients hold them, which is why a deployment never prints
    // its client.
    const client = (sb.deployments.get('oai-key') as unknown as { client: object }).client;
    expect(needles().some((n) => inspect(client).includes(n))).toBe(true);
    const leaks: string[] = [];
    for (const [place, text] of Object.entries(places)) {
      for (const needle of needles()) if (text.includes(needle)) leaks.push(`${place}: ${needle}`);
    }
    expect(leaks).toEqual([]);
  });
});

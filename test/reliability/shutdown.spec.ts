import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { metrics } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import {
  createSwitchboard,
  Switchboard,
  SwitchboardModule,
  type SwitchboardOptions,
} from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { oaiAndClaude } from '../support/upstream';
import { CLAUDE, flushRejections, GPT, recordUnhandled, type UnhandledRecorder } from './harness';

/** A reader the test collects from by hand. */
class ManualReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
/**
 * Records the timers made through this realm's `setTimeout` / `setInterval` (the switchboard's and
 * the simulated upstream's; not the HTTP client's, which lives in Node's own realm and keeps
 * timers of its own for pooled sockets, so a process-wide count of timers is noise).
 */
function trackTimers() {
  const made: Array<{ kind: string; timer: NodeJS.Timeout }> = [];
  const realTimeout = global.setTimeout;
  const realInterval = global.setInterval;
  const timeoutSpy = jest.spyOn(global, 'setTimeout').mockImplementation(((
    ...args: Parameters<typeof setTimeout>
  ) => {
    const timer = realTimeout(...args);
    made.push({ kind: 'timeout', timer });
    return timer;
  }) as typeof setTimeout);
  const intervalSpy = jest.spyOn(global, 'setInterval').mockImplementation(((
    ...args: Parameters<typeof setInterval>
  ) => {
    const timer = realInterval(...args);
    made.push({ kind: 'interval', timer });
    return timer;
  }) as typeof setInterval);
  return {
    made,
    /** Timers neither fired (timeouts) nor cleared. Node marks both `_destroyed`. */
    live: () =>
      made
        .filter(({ timer }) => !(timer as unknown as { _destroyed: boolean })._destroyed)
        .map(({ kind }) => kind),
    restore: () => {
      timeoutSpy.mockRestore();
      intervalSpy.mockRestore();
    },
  };
}

describe('shutdown', () => {
  let upstream: SimulatedUpstream;
  let unhandled: UnhandledRecorder;
  let options: SwitchboardOptions;

  beforeAll(async () => {
    unhandled = recordUnhandled();
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'oai' }, { name: 'claude' }],
    });
    options = {
      logger: quiet,
      deployments: oaiAndClaude(upstream, { tpm: 100_000, rpm: 1_000 }),
    };
  });
  afterAll(async () => {
    await upstream.close();
    unhandled.dispose();
  });
  beforeEach(() => {
    upstream.reset();
    for (const d of upstream.deployments) {
      d.latency = 0;
      d.chunkDelay = 0;
    }
  });
  afterEach(async () => {
    await flushRejections();
    expect(unhandled.seen).toEqual([]);
  });

  /** Calls of every kind, in flight once the upstream has them all; each settles to a label. */
  async function inFlight(sb: Switchboard): Promise<Array<Promise<string>>> {
    for (const d of upstream.deployments) {
      d.latency = 150;
      d.chunkDelay = 10;
    }
    const label = (p: Promise<unknown>) =>
      p.then(
        () => 'fulfilled',
        (e: unknown) => `rejected: ${(e as Error).constructor.name}`,
      );
    const read = async (stream: Promise<AsyncIterable<unknown>>) => {
      for await (const _ of await stream) void _;
    };
    const long = 'one two three four five six seven eight nine ten';
    const calls = [
      label(sb.chat.completions.create({ model: GPT, messages: [{ role: 'user', content: 'a' }] })),
      label(
        sb.messages.create({
          model: CLAUDE,
          max_tokens: 64,
          messages: [{ role: 'user', content: 'b' }],
        }),
      ),
      label(
        read(
          sb.chat.completions.create({
            model: GPT,
            stream: true,
            messages: [{ role: 'user', content: long }],
          }),
        ),
      ),
      label(
        read(
          sb.messages.create({
            model: CLAUDE,
            max_tokens: 64,
            stream: true,
            messages: [{ role: 'user', content: long }],
          }),
        ),
      ),
    ];
    await Promise.all(upstream.deployments.map((d) => d.waitFor((x) => x.stats.inFlight === 2)));
    return calls;
  }

  it('close() with calls in flight: they complete, no timer is left, close is idempotent', async () => {
    const timers = trackTimers();
    try {
      const sb = createSwitchboard(options);
      const calls = await inFlight(sb);
      await Promise.all([sb.close(), sb.close()]);
      await sb.close();
      expect(await Promise.all(calls)).toEqual([
        'fulfilled',
        'fulfilled',
        'fulfilled',
        'fulfilled',
      ]);
      await Promise.all(upstream.deployments.map((d) => d.whenIdle()));
      expect(timers.made.length).toBeGreaterThan(0); // each attempt's deadline, at least
      expect(timers.live()).toEqual([]);
    } finally {
      timers.restore();
    }
  });

  it('close() stops the usage-reset timer', async () => {
    jest.useFakeTimers();
    try {
      // The fixed window is the one with a timer (the sliding default needs none).
      const sb = createSwitchboard({ ...options, ratelimitWindow: 100, usageWindow: 'fixed' });
      const state = sb.deployments.get('oai')!.models.get(GPT)!;
      expect(jest.getTimerCount()).toBe(1);
      state.spend(5, 1);
      await jest.advanceTimersByTimeAsync(100);
      expect(state.rpmUsage).toBe(0); // the timer ran
      state.spend(5, 1);
      await sb.close();
      expect(jest.getTimerCount()).toBe(0);
      await jest.advanceTimersByTimeAsync(1_000);
      expect(state.rpmUsage).toBe(1); // and now it does not
    } finally {
      jest.useRealTimers();
    }
  });

  it('close() detaches the metric gauges', async () => {
    const reader = new ManualReader();
    const provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
    try {
      const sb = createSwitchboard(options);
      const oai = sb.deployments.get('oai')!.models.get(GPT)!;
      /** The utilization the gauge reports for oai. */
      const gauge = async () => {
        const { resourceMetrics } = await reader.collect();
        const points = resourceMetrics.scopeMetrics
          .flatMap((s) => s.metrics)
          .filter((m) => m.descriptor.name === 'switchboard.utilization')
          .flatMap((m) => m.dataPoints as Array<{ attributes: object; value: unknown }>);
        return points.find((p) => (p.attributes as { deployment?: string }).deployment === 'oai')
          ?.value;
      };
      oai.markDown(60_000);
      expect(await gauge()).toBe(1);
      oai.markUp();
      expect(await gauge()).toBe(0);
      await sb.close();
      // The callback is gone: the SDK repeats the last value it had, the change is not seen.
      oai.markDown(60_000);
      expect(await gauge()).toBe(0);
    } finally {
      await provider.shutdown();
      metrics.disable();
    }
  });

  it('app.close() of a Nest application with calls in flight: they complete, the timer stops', async () => {
    @Module({
      imports: [
        SwitchboardModule.forRoot({ ...options, ratelimitWindow: 100, usageWindow: 'fixed' }),
      ],
    })
    class AppModule {}
    const timers = trackTimers();
    try {
      const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
      const sb = app.get(Switchboard);
      const calls = await inFlight(sb);
      expect(timers.live()).toContain('interval'); // the usage-reset timer runs
      await app.close();
      expect(await Promise.all(calls)).toEqual([
        'fulfilled',
        'fulfilled',
        'fulfilled',
        'fulfilled',
      ]);
      await Promise.all(upstream.deployments.map((d) => d.whenIdle()));
      // The usage-reset interval was cleared, and every attempt's deadline with it.
      expect(timers.live()).toEqual([]);
    } finally {
      timers.restore();
    }
  });

  describe.each(['standalone', 'nest'])('a %s process', (mode) => {
    it('with calls in flight at close ends by itself, every call settled', async () => {
      const child = spawn(
        process.execPath,
        [
          '-r',
          join(__dirname, '../support/ts-register.js'),
          join(__dirname, 'shutdown-child.ts'),
          mode,
        ],
        { cwd: join(__dirname, '../..'), stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      clearTimeout(killer);

      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
        outcomes: Array<{ call: string; result: string; detail: string }>;
        after: string[];
      };
      // Ended by itself (the killer would have left no exit code): nothing kept it alive.
      expect(report.after).not.toContain('Timeout');
      const byCall = Object.fromEntries(report.outcomes.map((o) => [o.call, o]));
      for (const call of ['chat', 'messages', 'chat stream, read', 'messages stream, read']) {
        expect(byCall[call]?.result).toBe('fulfilled');
      }
      expect(byCall['chat stream, read']!.detail).toMatch(/^\d+ events$/);
      expect(Object.keys(byCall)).toHaveLength(6);
    }, 90_000);
  });
});

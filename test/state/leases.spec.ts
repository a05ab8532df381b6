import { randomBytes } from 'node:crypto';
import { metrics } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import type { DeploymentConfig, ModelConfig, Switchboard } from '../../src';
import { createSwitchboard, redisState } from '../../src';
import { SimulatedUpstream, type SimulatedDeploymentOptions } from '../../src/testing';
import { eventually } from '../support/eventually';
import { FakeClock } from '../support/random';
import { RedisServer } from '../support/redis-server';
import { ask, askClaude, CLAUDE, GPT } from '../support/upstream';
import { expectLocalLeases, leasePoints, leasesSettled, RecordingLogger } from './cluster';
import { TestReader } from '../support/metric-reader';

/** `switchboard.leases` by result, summed over the replicas' points. */
async function leaseCounts(reader: TestReader): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const p of await leasePoints(reader)) {
    const result = String(p.attributes['result']);
    out[result] = (out[result] ?? 0) + p.value;
  }
  return out;
}

/** Virtual time moves in steps of this many ms while calls wait and none is on its way. */
const STEP = 500;
/** 1 600 characters: 400 prompt tokens; with 100 of output cap, 500 a call at admission. */
const PROMPT = 'x'.repeat(1_600);

let server: RedisServer;
beforeAll(async () => {
  server = await RedisServer.start();
});
afterAll(async () => {
  await server.close();
});

interface Replicas {
  clock: FakeClock;
  upstream: SimulatedUpstream;
  instances: Switchboard[];
  loggers: RecordingLogger[];
  close(): Promise<void>;
}

/**
 * `n` switchboards, each with its own Redis connection, sharing one simulated deployment of
 * `provider` and one virtual clock the test moves; each waits in a queue for room.
 */
async function replicas(
  n: number,
  provider: 'openai' | 'anthropic',
  limits: Omit<SimulatedDeploymentOptions, 'name'>,
  model: ModelConfig,
  state: { replicas?: number; timeout?: number } = {},
): Promise<Replicas> {
  const reachable = server.running;
  const clock = new FakeClock();
  const name = provider === 'openai' ? 'oai0' : 'claude0';
  const upstream = await SimulatedUpstream.start({
    clock: clock.now,
    deployments: [{ name, completionTokens: 20, ...limits }],
  });
  const sim = upstream.deployment(name);
  const deployment: DeploymentConfig =
    provider === 'openai'
      ? { provider, name, baseURL: sim.openaiBaseURL, apiKey: 'k', models: [model] }
      : { provider, name, baseURL: sim.anthropicBaseURL, apiKey: 'k', models: [model] };
  const prefix = `leases-${randomBytes(4).toString('hex')}:`;
  const loggers = Array.from({ length: n }, () => new RecordingLogger());
  const instances = loggers.map((logger) =>
    createSwitchboard({
      deployments: [deployment],
      clock: clock.now,
      ratelimitWindow: 60_000,
      logger,
      queue: { maxWait: 3_600_000 },
      // A stopped server fails every command at once (no offline queue): the timeout only bounds
      // a slow one. At 100 ms, a worker stalled by a loaded machine took the store for down, and
      // one replica alone admitting within its 1/4 beside the others' leases is an overdraft.
      state: redisState({ url: server.url, prefix, syncInterval: 100, timeout: 2_000, ...state }),
    }),
  );
  if (reachable) {
    await eventually(() => instances.every((sb) => sb.state.health().lastSync !== undefined));
  }
  return {
    clock,
    upstream,
    instances,
    loggers,
    close: async () => {
      await Promise.all(instances.map((sb) => sb.close()));
      await upstream.close();
    },
  };
}

/**
 * Sends `perInstance` calls through every instance at once, and moves the injected clock while calls
 * wait and none is on its way, until all are answered. `between` runs at every step.
 */
async function wave(
  r: Replicas,
  perInstance: number,
  call: (sb: Switchboard, i: number) => Promise<unknown>,
  between?: () => Promise<void>,
): Promise<{ clockMoved: number }> {
  const start = r.clock.ms;
  let done = 0;
  const calls = r.instances.flatMap((sb, k) =>
    Array.from({ length: perInstance }, (_, i) => call(sb, k * 100 + i).then(() => done++)),
  );
  const total = calls.length;
  const model = (sb: Switchboard) =>
    sb.deployments.values().next().value!.models.values().next().value!;
  while (done < total && r.clock.ms - start < 600_000) {
    await new Promise<void>((resolve) => setTimeout(resolve, 2));
    const waiting = r.instances.some((sb) => sb.queue!.length(model(sb).name) > 0);
    const flying = r.instances.some((sb) => model(sb).inFlight.count > 0);
    if (waiting && !flying && r.instances.every(leasesSettled)) {
      r.clock.advance(STEP);
      await between?.();
      for (const sb of r.instances) sb.queue!.kick(model(sb).name);
    }
  }
  await Promise.all(calls);
  // Virtual ms: how far the test's injected clock was moved while the calls waited for room.
  return { clockMoved: r.clock.ms - start };
}

const azureCall = (sb: Switchboard, i: number) =>
  sb.chat.completions.create(ask(`${i} ${PROMPT}`.slice(0, PROMPT.length), { max_tokens: 100 }));

describe('admission by leases', () => {
  jest.setTimeout(60_000);
  let r: Replicas | undefined;
  afterEach(async () => {
    await r?.close();
    r = undefined;
  });

  it("four replicas never send an Azure window more than it admits, across the window's end", async () => {
    // 6 000 tokens a minute: 12 calls of 500 per window; 48 calls take four windows.
    const limits = { tpm: 6_000, rpm: 6_000 };
    const reader = new TestReader();
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
    const k = (r = await replicas(4, 'openai', limits, { name: GPT, ...limits }));
    // Exported from start-up, each result at least at 0.
    expect(Object.keys(await leaseCounts(reader)).sort()).toEqual([
      'granted',
      'returned',
      'shrunk',
    ]);
    const { clockMoved } = await wave(k, 12, azureCall);
    const counts = await leaseCounts(reader);
    metrics.disable();
    // Leases shrank to one call's charge as each window's room ran low.
    expect(counts['granted']).toBeGreaterThan(0);
    expect(counts['shrunk']).toBeGreaterThan(0);
    const sim = k.upstream.deployment('oai0');
    expect(sim.stats.rateLimited).toBe(0);
    expect(sim.stats.requests).toBe(48);
    // Four windows' worth went in four windows (and the steps of the test's clock between
    // them): the shares kept the upstream busy.
    expect(clockMoved).toBeGreaterThanOrEqual(3 * 60_000);
    expect(clockMoved).toBeLessThanOrEqual(4 * 60_000 + 20 * STEP);
    // The store was up throughout: no replica admitted from its own part meanwhile.
    for (const logger of k.loggers) expect(logger.warnings(/cannot be reached/)).toEqual([]);
    const health = k.instances.map((sb) => sb.state.health().leases as Record<string, number>);
    // Replicas are counted from the store's peers that exchanged within the last minute.
    expect(health.every((h) => h.mode === ('store' as unknown) && h.replicas <= 4)).toBe(true);
    // Leases are topped up ahead: fewer round trips than calls.
    const exchanges = health.reduce((s, h) => s + h.exchanges, 0);
    process.stdout.write(`4 replicas, 48 calls over 4 windows: ${exchanges} lease exchanges\n`);
  });

  it("four replicas never overdraw Claude's token buckets", async () => {
    // 6 000 input tokens a minute, refilled continuously; 400 a call.
    const limits = { rpm: 6_000, itpm: 6_000, otpm: 100_000 };
    const k = (r = await replicas(4, 'anthropic', limits, { name: CLAUDE, ...limits }));
    const call = (sb: Switchboard, i: number) =>
      sb.messages.create(askClaude(`${i} ${PROMPT}`.slice(0, PROMPT.length), { max_tokens: 100 }));
    const { clockMoved } = await wave(k, 10, call);
    const sim = k.upstream.deployment('claude0');
    expect(sim.stats.rateLimited).toBe(0);
    expect(sim.stats.requests).toBe(40);
    // 16 000 input tokens: a full bucket then 10 000 refilled at 100 a second.
    expect(clockMoved).toBeGreaterThanOrEqual(90_000);
    expect(clockMoved).toBeLessThan(180_000);
  });

  it('admits within 1/replicas of each limit while the store is stopped, and says so', async () => {
    const limits = { tpm: 6_000, rpm: 6_000 };
    const k = (r = await replicas(4, 'openai', limits, { name: GPT, ...limits }));
    // Everyone took a lease once: the store counted four replicas.
    await wave(k, 1, azureCall);
    await server.stop();
    try {
      // 3 calls a replica: 1 500 tokens each, a quarter of the window's 6 000.
      const { clockMoved } = await wave(k, 6, azureCall);
      const sim = k.upstream.deployment('oai0');
      expect(sim.stats.rateLimited).toBe(0);
      expect(sim.stats.requests).toBe(4 + 24);
      expect(clockMoved).toBeGreaterThanOrEqual(60_000);
      expectLocalLeases(k.instances, k.loggers, 4);
    } finally {
      await server.restart();
    }
    // Back: the leases come from the store again.
    await eventually(() =>
      k.instances.every((sb) => (sb.state.health().leases as { mode: string }).mode === 'store'),
    );
  });

  it('splits each limit by the configured replicas when the store was never reached', async () => {
    const limits = { tpm: 6_000, rpm: 6_000 };
    await server.stop();
    try {
      const k = (r = await replicas(
        2,
        'openai',
        limits,
        { name: GPT, ...limits },
        // No command ever goes: the timeout is only the disconnect timer ioredis arms for the
        // socket that never opened, which would hold the worker 2 s past the file.
        { replicas: 2, timeout: 100 },
      ));
      // 8 calls a replica, 4 000 tokens: each admits 3 000 a window, half of the 6 000.
      const { clockMoved } = await wave(k, 8, azureCall);
      const sim = k.upstream.deployment('oai0');
      expect(sim.stats.rateLimited).toBe(0);
      expect(sim.stats.requests).toBe(16);
      expect(clockMoved).toBeGreaterThanOrEqual(60_000);
      expect(k.instances[0]!.state.health().leases).toMatchObject({ mode: 'local', replicas: 2 });
    } finally {
      await server.restart();
    }
  });
});

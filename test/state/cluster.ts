import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import type { DataPoint } from '@opentelemetry/sdk-metrics';
import type { TestReader } from '../support/metric-reader';
import type { DeploymentConfig, RedisStateOptions, SwitchboardLogger } from '../../src';
import { createSwitchboard, redisState, type Switchboard } from '../../src';
import type { ModelState } from '../../src/registry/model-state';
import { SimulatedUpstream, type SimulatedDeploymentOptions } from '../../src/testing';
import { GPT } from '../support/upstream';

/** A logger that keeps what it is told. */
export class RecordingLogger implements SwitchboardLogger {
  readonly lines: { level: 'log' | 'warn' | 'error'; message: string }[] = [];
  log(message: unknown): void {
    this.lines.push({ level: 'log', message: String(message) });
  }
  warn(message: unknown): void {
    this.lines.push({ level: 'warn', message: String(message) });
  }
  error(message: unknown): void {
    this.lines.push({ level: 'error', message: String(message) });
  }
  warnings(pattern: RegExp = /./): string[] {
    return this.lines
      .filter((l) => l.level === 'warn' && pattern.test(l.message))
      .map((l) => l.message);
  }
}

export interface ClusterOptions {
  instances: number;
  redisUrl: string;
  deployments?: number;
  quota?: { tpm?: number; rpm?: number; cooldown?: number; outputReservation?: number };
  simulated?: Partial<SimulatedDeploymentOptions>;
  state?: Partial<RedisStateOptions>;
  ratelimitWindow?: number;
  clock?: () => number;
}

/** N switchboards, each with its own Redis connection, over the same simulated deployments. */
export interface Cluster {
  upstream: SimulatedUpstream;
  instances: Switchboard[];
  loggers: RecordingLogger[];
  prefix: string;
  model(instance: number, deployment: string): ModelState;
  close(): Promise<void>;
}

export async function cluster(options: ClusterOptions): Promise<Cluster> {
  const names = Array.from({ length: options.deployments ?? 3 }, (_, i) => `oai${i}`);
  const upstream = await SimulatedUpstream.start({
    deployments: names.map((name) => ({ name, ...options.simulated })),
  });
  const deployments: DeploymentConfig[] = names.map((name) => ({
    provider: 'openai',
    name,
    baseURL: upstream.deployment(name).openaiBaseURL,
    apiKey: `sk-secret-${name}`,
    models: [{ name: GPT, ...(options.quota ?? { tpm: 30_000, rpm: 300 }) }],
  }));
  const prefix = `t${randomBytes(4).toString('hex')}:`;
  const loggers = Array.from({ length: options.instances }, () => new RecordingLogger());
  const instances = loggers.map((logger) =>
    createSwitchboard({
      deployments,
      ratelimitWindow: options.ratelimitWindow ?? 60_000,
      logger,
      clock: options.clock,
      state: redisState({ url: options.redisUrl, prefix, syncInterval: 50, ...options.state }),
    }),
  );
  return {
    upstream,
    instances,
    loggers,
    prefix,
    model: (i, d) => instances[i]!.deployments.get(d)!.models.get(GPT)!,
    close: async () => {
      await Promise.all(instances.map((sb) => sb.close()));
      await upstream.close();
    },
  };
}

/** A plain client to look at what the stores wrote. */
export function inspector(url: string): Redis {
  return new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
}

/**
 * Every replica admits from leases of its own making while the store cannot be reached: its store
 * reports degraded health, leases in `local` mode split among `replicas`, and it said so once.
 */
export function expectLocalLeases(
  instances: readonly Switchboard[],
  loggers: readonly RecordingLogger[],
  replicas: number,
): void {
  for (const [i, sb] of instances.entries()) {
    const health = sb.state.health();
    expect(health.status).toBe('degraded');
    expect(health.leases).toMatchObject({ mode: 'local', replicas });
    expect(loggers[i]!.warnings(/Leases: the shared store cannot be reached/)).toHaveLength(1);
  }
}

/** The points of `switchboard.leases` a reader collects now: each with its attributes and count. */
export async function leasePoints(reader: TestReader): Promise<DataPoint<number>[]> {
  const { resourceMetrics } = await reader.collect();
  return resourceMetrics.scopeMetrics
    .flatMap((scope) => scope.metrics)
    .filter((metric) => metric.descriptor.name === 'switchboard.leases')
    .flatMap((metric) => metric.dataPoints as DataPoint<number>[]);
}

/**
 * Whether no lease exchange of `sb`'s store is on its way: a spec that moves an injected clock
 * while calls wait moves it only then, so that virtual time does not run on during a round trip
 * (as many steps as a loaded machine's turns would take).
 */
export function leasesSettled(sb: Switchboard): boolean {
  const leases = (sb.state as unknown as { leases?: { exchanging: boolean } }).leases;
  return leases?.exchanging !== true;
}

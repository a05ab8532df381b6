/**
 * Simulated deployments for the benchmark, one `SimulatedUpstream` (one port) per deployment,
 * either in a child process (default: the client's CPU time is then the client's alone) or in
 * this process (`--inproc`). Both sides speak the same small command set.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { DeploymentConfig } from '../src';
import type {
  SimulatedDeploymentOptions,
  SimulatedDeploymentStats,
  SimulatedFault,
} from '../src/testing';
import { SimulatedUpstream } from '../src/testing';
import { TS_REGISTER } from './util';

/** Where the SDK clients reach one simulated deployment. */
export interface Endpoint {
  name: string;
  openaiBaseURL: string;
  anthropicBaseURL: string;
}

/**
 * One model of the bench on every simulated deployment, reached through the `openai` client,
 * as the time-scaled sections (strategies, quota) configure it: a 5 s deadline and a cooldown of
 * 10 s of the scaled clock.
 *
 * @example
 * ```ts
 * const deployments = openaiDeployments(upstreams.endpoints, { name: 'gpt-4o-mini', tpm, rpm }, 20);
 * ```
 */
export function openaiDeployments(
  endpoints: readonly Endpoint[],
  model: { name: string; tpm: number; rpm: number },
  timeScale: number,
  priority?: (deployment: string) => number | undefined,
): DeploymentConfig[] {
  return endpoints.map((e) => ({
    provider: 'openai',
    name: e.name,
    baseURL: e.openaiBaseURL,
    apiKey: 'bench',
    timeout: 5000,
    ...(priority?.(e.name) !== undefined ? { priority: priority(e.name) } : {}),
    models: [{ ...model, cooldown: Math.round(10_000 / timeScale) }],
  }));
}

/** Commands understood by both the child process and the in-process host. */
export type Command =
  | { cmd: 'start'; deployments: SimulatedDeploymentOptions[] }
  | { cmd: 'stats' }
  | { cmd: 'reset' }
  | { cmd: 'fail'; name: string; fault: SimulatedFault; times?: number }
  | { cmd: 'set'; latency?: number; chunkDelay?: number }
  | { cmd: 'close' };

/** A set of simulated deployments, wherever they run. */
export interface Upstreams {
  readonly endpoints: readonly Endpoint[];
  /** Counters by deployment name. */
  stats(): Promise<Record<string, SimulatedDeploymentStats>>;
  /** Faults, counters and quota windows back to zero. */
  reset(): Promise<void>;
  fail(name: string, fault: SimulatedFault, times?: number): Promise<void>;
  set(knobs: { latency?: number; chunkDelay?: number }): Promise<void>;
  close(): Promise<void>;
}

/** Runs commands against upstreams of this process: the child's engine and `--inproc`. */
export class UpstreamHost {
  private upstreams: SimulatedUpstream[] = [];

  async run(command: Command): Promise<unknown> {
    switch (command.cmd) {
      case 'start': {
        await this.closeAll();
        this.upstreams = await Promise.all(
          command.deployments.map((d) => SimulatedUpstream.start({ deployments: [d] })),
        );
        for (const u of this.upstreams) {
          // Node's default keep-alive timeout (5 s) races with the client reusing an idle socket
          // (ECONNRESET on the next round); real endpoints keep connections longer.
          const server = (u as unknown as { server: { keepAliveTimeout: number } }).server;
          server.keepAliveTimeout = 120_000;
        }
        return this.upstreams.map((u) => {
          const d = u.deployments[0]!;
          return {
            name: d.name,
            openaiBaseURL: d.openaiBaseURL,
            anthropicBaseURL: d.anthropicBaseURL,
          };
        });
      }
      case 'stats':
        return Object.fromEntries(
          this.upstreams.map((u) => {
            const d = u.deployments[0]!;
            return [d.name, { ...d.stats, byStatus: { ...d.stats.byStatus } }];
          }),
        );
      case 'reset':
        for (const u of this.upstreams) u.reset();
        return undefined;
      case 'fail':
        this.find(command.name).fail(command.fault, command.times ?? 1);
        return undefined;
      case 'set':
        for (const u of this.upstreams) {
          const d = u.deployments[0]!;
          if (command.latency !== undefined) d.latency = command.latency;
          if (command.chunkDelay !== undefined) d.chunkDelay = command.chunkDelay;
        }
        return undefined;
      case 'close':
        await this.closeAll();
        return undefined;
    }
  }

  private find(name: string) {
    for (const u of this.upstreams) if (u.deployments[0]!.name === name) return u.deployments[0]!;
    throw new Error(`no simulated deployment ${name}`);
  }

  private async closeAll(): Promise<void> {
    const all = this.upstreams;
    this.upstreams = [];
    await Promise.all(all.map((u) => u.close()));
  }
}

abstract class BaseUpstreams implements Upstreams {
  endpoints: Endpoint[] = [];
  protected abstract send(command: Command): Promise<unknown>;

  async start(deployments: SimulatedDeploymentOptions[]): Promise<this> {
    this.endpoints = (await this.send({ cmd: 'start', deployments })) as Endpoint[];
    return this;
  }
  async stats(): Promise<Record<string, SimulatedDeploymentStats>> {
    return (await this.send({ cmd: 'stats' })) as Record<string, SimulatedDeploymentStats>;
  }
  async reset(): Promise<void> {
    await this.send({ cmd: 'reset' });
  }
  async fail(name: string, fault: SimulatedFault, times?: number): Promise<void> {
    await this.send({ cmd: 'fail', name, fault, times });
  }
  async set(knobs: { latency?: number; chunkDelay?: number }): Promise<void> {
    await this.send({ cmd: 'set', ...knobs });
  }
  abstract close(): Promise<void>;
}

class LocalUpstreams extends BaseUpstreams {
  private readonly host = new UpstreamHost();
  protected send(command: Command): Promise<unknown> {
    return this.host.run(command);
  }
  async close(): Promise<void> {
    await this.host.run({ cmd: 'close' });
  }
}

interface Reply {
  id: number;
  ok: boolean;
  result?: unknown;
  error?: string;
}

class ChildUpstreams extends BaseUpstreams {
  private readonly child: ChildProcess;
  private readonly pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: Error) => void }
  >();
  private next = 0;
  private exited = false;

  constructor() {
    super();
    this.child = fork(join(__dirname, 'upstream-child.ts'), [], {
      execArgv: ['--require', TS_REGISTER],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (reply: Reply) => {
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      if (reply.ok) p.resolve(reply.result);
      else p.reject(new Error(`upstream child: ${reply.error}`));
    });
    this.child.on('exit', (code, signal) => {
      this.exited = true;
      for (const p of this.pending.values()) {
        p.reject(new Error(`upstream child exited (code ${code}, signal ${signal})`));
      }
      this.pending.clear();
    });
  }

  protected send(command: Command): Promise<unknown> {
    if (this.exited) return Promise.reject(new Error('upstream child has exited'));
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ id, ...command });
    });
  }

  async close(): Promise<void> {
    if (this.exited) return;
    await this.send({ cmd: 'close' }).catch(() => undefined);
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.disconnect();
    const timer = setTimeout(() => this.child.kill(), 2000);
    await exited;
    clearTimeout(timer);
  }
}

/**
 * Starts one simulated upstream per deployment (each on its own port), in a child process unless
 * `inproc`.
 */
export async function startUpstreams(
  deployments: SimulatedDeploymentOptions[],
  inproc: boolean,
): Promise<Upstreams> {
  const upstreams = inproc ? new LocalUpstreams() : new ChildUpstreams();
  try {
    return await upstreams.start(deployments);
  } catch (error) {
    await upstreams.close();
    throw error;
  }
}

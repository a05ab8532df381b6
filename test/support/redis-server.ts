import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { eventually } from './eventually';

/**
 * A real `redis-server` on a free loopback port, without persistence, that a test can stop,
 * restart on the same port, or freeze (SIGSTOP) to play a hung server.
 *
 * Needs the `redis-server` binary (Debian/Ubuntu: `apt-get install -y redis-server`).
 */
export class RedisServer {
  private child: ChildProcess | undefined;
  private frozen = false;

  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  /**
   * Starts a server on a free port and resolves once it accepts connections. The port is below
   * the ephemeral range, which the servers other specs start on port 0 (and every outgoing
   * connection) draw from: a restart on the same port does not find it taken by another worker's
   * server. Two workers that pick the same port anyway: the loser tries another.
   */
  static async start(): Promise<RedisServer> {
    const dir = mkdtempSync(join(tmpdir(), 'sb-redis-'));
    for (let attempt = 1; ; attempt++) {
      const server = new RedisServer(await freePort(), dir);
      try {
        await server.restart();
        return server;
      } catch (error) {
        if (attempt >= 5 || !/in use/i.test(String((error as Error).message))) {
          rmSync(dir, { recursive: true, force: true });
          throw error;
        }
      }
    }
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Starts the server again on the same port (after {@link stop}). */
  async restart(): Promise<void> {
    if (this.child) return;
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.dir,
        '--loglevel',
        'warning',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const failed = new Promise<never>((_, reject) => {
      child.once('error', (error: NodeJS.ErrnoException) =>
        reject(
          error.code === 'ENOENT'
            ? new Error(
                'redis-server is not installed: run `apt-get update && apt-get install -y redis-server`',
              )
            : error,
        ),
      );
      child.once('exit', (code) =>
        reject(new Error(`redis-server exited with ${String(code)}: ${stderr.trim()}`)),
      );
    });
    failed.catch(() => undefined);
    this.child = child;
    try {
      await Promise.race([
        eventually(() => listening(this.port), {
          timeout: 5_000,
          interval: 20,
          what: `redis-server listening on ${this.port}`,
        }),
        failed,
      ]);
    } catch (error) {
      this.child = undefined;
      child.kill('SIGKILL');
      throw error;
    }
    child.removeAllListeners('exit');
    child.once('exit', () => {
      if (this.child === child) this.child = undefined;
    });
  }

  /** Stops the server (SIGTERM) and resolves once the process is gone. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    if (this.frozen) this.resume();
    child.kill('SIGTERM');
    await exited;
  }

  /** Freezes the process: connections stay open, nothing is answered. */
  freeze(): void {
    if (!this.child) return;
    this.child.kill('SIGSTOP');
    this.frozen = true;
  }

  resume(): void {
    if (!this.child || !this.frozen) return;
    this.child.kill('SIGCONT');
    this.frozen = false;
  }

  /** Stops the server and removes its directory. */
  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A port in 20000-32767 (below Linux's ephemeral range) that nothing listens on now. */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_768);
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/** Whether something accepts connections on `port` now. */
function listening(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * One `redis-server` for the specs of a file, started before them and stopped after, with one
 * plain client to look into it (one retry, so a spec that stopped the server fails fast).
 *
 *   const store = redisForFile();
 *   it('...', async () => { redisState({ url: store.server.url }); await store.client.get(key); });
 */
export function redisForFile(): { readonly server: RedisServer; readonly client: Redis } {
  let server: RedisServer | undefined;
  let client: Redis | undefined;
  beforeAll(async () => {
    server = await RedisServer.start();
    client = new Redis(server.url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    client?.disconnect();
    await server?.close();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('redisForFile(): used outside a spec or hook');
    return value;
  };
  return {
    get server() {
      return started(server);
    },
    get client() {
      return started(client);
    },
  };
}

import { peerRequire } from '../../runtime/peer-require';
import { SwitchboardError } from '../../switchboard.error';
import type { RedisClientLike } from './redis-client';
import type { ResolvedRedisOptions } from './redis-options';

export type { RedisClientLike } from './redis-client';

/**
 * How a store gets its client: a function that makes (or hands over) the connection when the
 * switchboard starts, and whether the store owns it (closes it on `close()`).
 *
 * @example
 * ```ts
 * const { connect, owned } = redisConnector(resolveRedisOptions({ url: 'redis://localhost:6379' }));
 * const client = connect(); // owned === true: the store quits it on close
 * ```
 */
export function redisConnector(o: ResolvedRedisOptions): {
  connect: () => RedisClientLike;
  owned: boolean;
} {
  if (o.client !== undefined) {
    const client = o.client;
    return { connect: () => client, owned: false };
  }
  // Loaded now, not at connect time: a missing package fails where redisState() is called.
  const Redis = loadIoredis();
  const url = o.url!;
  return {
    owned: true,
    connect: () =>
      new Redis(url, {
        // Nothing queues behind a dead connection: a command fails at once and the store degrades.
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        commandTimeout: o.timeout,
        connectTimeout: Math.max(1000, o.timeout * 4),
        // ioredis arms this timer on disconnect even for a dead socket; it holds the process open.
        disconnectTimeout: o.timeout,
        retryStrategy: (times: number) => Math.min(times * 100, 1000),
        connectionName: 'switchboard',
      }),
  };
}

/**
 * `promise`, or a rejection naming `what` once `ms` have passed. A late failure of `promise` is
 * swallowed, so a timed-out command never becomes an unhandled rejection.
 *
 * @example
 * ```ts
 * await bounded(client.get(key), 'session lookup', 250);
 * ```
 */
export function bounded<T>(promise: Promise<T>, what: string, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis ${what} took longer than ${ms} ms`)), ms);
  });
  promise.catch(() => undefined);
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Closes a client the store owns: quits politely while it is ready (bounded by `ms`), else drops
 * the socket. Errors after this point are nobody's business.
 *
 * @example
 * ```ts
 * await closeClient(client, 250);
 * ```
 */
export async function closeClient(client: RedisClientLike, ms: number): Promise<void> {
  // ioredis emits errors after quit() when the server is gone; nobody should hear them.
  client.on('error', () => undefined);
  if (client.status !== 'ready') client.disconnect();
  else await bounded(client.quit(), 'quit', ms).catch(() => client.disconnect());
}

/**
 * A short description of why Redis failed, for one log line and `health()`.
 *
 * @example
 * ```ts
 * describeFailure(new Error('connect ECONNREFUSED 127.0.0.1:6379')); // 'connect ECONNREFUSED 127.0.0.1:6379'
 * ```
 */
export function describeFailure(reason: unknown): string {
  if (reason instanceof Error) return reason.message || reason.name;
  return String(reason);
}

type IoredisConstructor = new (url: string, options: Record<string, unknown>) => RedisClientLike;

function loadIoredis(): IoredisConstructor {
  let mod: unknown;
  try {
    // Loaded here, not at import: applications without Redis never need the package.
    mod = peerRequire('ioredis');
  } catch (error) {
    const { code } = (error ?? {}) as { code?: unknown };
    if (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') {
      throw new SwitchboardError(
        'redisState() needs the ioredis package: run `npm install ioredis` (or pass an ioredis instance as `client`)',
        { cause: error },
      );
    }
    throw error;
  }
  const m = mod as { Redis?: unknown; default?: unknown };
  return (m.Redis ?? m.default ?? mod) as IoredisConstructor;
}

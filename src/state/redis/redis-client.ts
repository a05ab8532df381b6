/**
 * The part of an `ioredis` client (`Redis` or `Cluster`) that {@link redisState} uses, so that the
 * switchboard's types do not require `ioredis` to be installed.
 *
 * @example
 * ```ts
 * import Redis from 'ioredis';
 * const client: RedisClientLike = new Redis(process.env.REDIS_URL!);
 * ```
 */
export interface RedisClientLike {
  /** `ready` while commands can be sent. */
  readonly status: string;
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  get(key: string): Promise<string | null>;
  set(key: string, value: string, px: 'PX', milliseconds: number): Promise<unknown>;
  on(event: 'error' | 'ready' | 'close', listener: (...args: unknown[]) => void): unknown;
  off(event: 'error' | 'ready' | 'close', listener: (...args: unknown[]) => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
}

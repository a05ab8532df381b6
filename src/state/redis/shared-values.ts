import type { SharedValues } from '../state-store';
import { bounded, type RedisClientLike } from './redis-connection';

/**
 * What {@link sharedValuesOf} needs of its store: the client while commands can be sent, the
 * prefix, the timeout of one command, and where failures and skipped values go.
 *
 * @example
 * ```ts
 * const link: SharedValuesLink = { ready: () => client, prefix: () => 'switchboard:', timeout: 250,
 *   degrade: (e) => log(e), skipped: (what) => log(what) };
 * ```
 */
interface SharedValuesLink {
  ready(): RedisClientLike | undefined;
  prefix(): string | undefined;
  timeout: number;
  degrade(error: unknown): void;
  skipped(what: string): void;
}

/**
 * {@link SharedValues} in Redis: `GET` bounded by the store's timeout, `SET … PX` not awaited;
 * both do nothing while the store is not ready.
 *
 * @example
 * ```ts
 * const values = sharedValuesOf(link);
 * values.set('cache:9f2c…', text, 60_000);
 * ```
 */
export function sharedValuesOf(link: SharedValuesLink): SharedValues {
  return {
    get(key) {
      const client = link.ready();
      const prefix = link.prefix();
      if (client === undefined || prefix === undefined) return Promise.resolve(undefined);
      return bounded(client.get(`${prefix}${key}`), 'read', link.timeout).then(
        (value) => (typeof value === 'string' ? value : undefined),
        (error: unknown) => {
          link.degrade(error);
          return undefined;
        },
      );
    },
    set(key, value, ttlMs) {
      const client = link.ready();
      const prefix = link.prefix();
      if (client === undefined || prefix === undefined) return;
      bounded(
        client.set(`${prefix}${key}`, value, 'PX', Math.max(1, Math.ceil(ttlMs))),
        'write',
        link.timeout,
      ).catch((error: unknown) => link.degrade(error));
    },
    skipped: (what) => link.skipped(what),
  };
}

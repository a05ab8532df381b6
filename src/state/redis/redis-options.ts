import { createHash } from 'node:crypto';
import { z } from 'zod';
import { describeIssues } from '../../errors/field-path';
import { SwitchboardError } from '../../switchboard.error';
import type { RedisClientLike } from './redis-client';
import { leaseOptionsSchema, replicasSchema, type LeaseOptions } from '../leases/lease-options';

/**
 * Options of {@link redisState}: one of `url` or `client`.
 *
 * @example
 * ```ts
 * const options: RedisStateOptions = { url: 'redis://redis:6379/0', prefix: 'chat-api:', syncInterval: 500 };
 * ```
 */
export interface RedisStateOptions {
  /** `redis://[[user]:password@]host:port[/db]`, or `rediss://` for TLS. The store owns this connection. */
  url?: string;
  /**
   * An `ioredis` client (`Redis`, or `Cluster` with a `{hash-tag}` in `prefix`) that you own: the
   * store does not close it. Prefer `url`, which sets the short timeouts the store relies on.
   */
  client?: RedisClientLike;
  /**
   * Prefix of every key. Instances share usage, cooldowns and sessions exactly when they use the
   * same Redis and prefix. Default: `'switchboard:<hash>:'`, where the hash is taken over the
   * switchboard's deployments (names, endpoints and model names, sorted), so that replicas of
   * one application share and two applications with other deployments never do by accident. Set
   * it when replicas must share across configurations (a rolling update that adds a deployment),
   * or for Redis Cluster (with a `{hash-tag}`).
   */
  prefix?: string;
  /** ms between two syncs of usage and cooldowns. Default 1000. */
  syncInterval?: number;
  /** ms a session's deployment is kept after its last call (sliding). Default 3 600 000 (1 h). */
  sessionTtl?: number;
  /**
   * ms a stored response's deployment is kept after the response was created, so that a
   * `previous_response_id` chain or `responses.retrieve(id)` through any instance reaches it.
   * Default 86 400 000 (24 h); Azure keeps stored responses 30 days, so raise it (up to
   * 2 592 000 000) when chains resume later than a day. Each key costs about 100 bytes.
   */
  responseTtl?: number;
  /** ms any Redis operation may take before it counts as failed. Default 250. */
  timeout?: number;
  /**
   * Admission by leases: each replica admits from shares of each limit it took from the store in
   * one atomic step, so the replicas together never send more than the upstream admits.
   * Default `{ share: 0.05 }`; `false` admits by the synced view alone.
   */
  leases?: LeaseOptions | false;
  /**
   * Replicas each limit is split among while the store cannot be reached (each admits
   * `1 / replicas` of it). Default: learned from the store (how many replicas exchanged leases
   * lately), 1 before it was ever reached.
   */
  replicas?: number;
}

/**
 * {@link RedisStateOptions} with every default filled in.
 *
 * @example
 * ```ts
 * const o: ResolvedRedisOptions = resolveRedisOptions({ url: 'redis://localhost:6379' });
 * o.syncInterval; // 1000
 * ```
 */
export type ResolvedRedisOptions = Required<
  Omit<RedisStateOptions, 'url' | 'client' | 'prefix' | 'leases' | 'replicas'>
> &
  Pick<RedisStateOptions, 'url' | 'client' | 'prefix' | 'leases' | 'replicas'>;

const ms = (fallback: number) =>
  z
    .number({ error: 'must be a positive number of milliseconds' })
    .finite({ error: 'must be a positive number of milliseconds' })
    .positive({ error: 'must be a positive number of milliseconds' })
    // Timers take whole milliseconds; rounding up keeps a tiny value positive.
    .transform(Math.ceil)
    .default(fallback);

/** The zod schema of {@link RedisStateOptions}. */
const schema = z
  .strictObject({
    url: z
      .string({ error: 'must be a redis:// or rediss:// URL, e.g. redis://localhost:6379' })
      .regex(/^rediss?:\/\//, {
        error: 'must be a redis:// or rediss:// URL, e.g. redis://localhost:6379',
      })
      .optional(),
    client: z
      .custom<RedisClientLike>(
        (v) =>
          typeof v === 'object' && v !== null && typeof (v as RedisClientLike).eval === 'function',
        { error: 'must be an ioredis Redis or Cluster client' },
      )
      .optional(),
    prefix: z
      .string({ error: "must be a non-empty string, e.g. 'myapp:'" })
      .min(1, { error: "must be a non-empty string, e.g. 'myapp:'" })
      .optional(),
    syncInterval: ms(1000),
    sessionTtl: ms(3_600_000),
    responseTtl: ms(86_400_000),
    timeout: ms(250),
    leases: leaseOptionsSchema,
    replicas: replicasSchema,
  })
  .refine((o) => (o.url === undefined) !== (o.client === undefined), {
    error:
      'needs exactly one of `url` (e.g. redis://localhost:6379) or `client` (an ioredis instance)',
  });

/**
 * Checks {@link RedisStateOptions} and fills in the defaults, or throws one
 * {@link SwitchboardError} that names every wrong field.
 *
 * @example
 * ```ts
 * resolveRedisOptions({ url: 'redis://a', syncInterval: 0 });
 * // SwitchboardError: Invalid redisState() options: syncInterval must be a positive number of milliseconds
 * ```
 */
export function resolveRedisOptions(options: RedisStateOptions): ResolvedRedisOptions {
  if (options === null || typeof options !== 'object') {
    throw new SwitchboardError('redisState() expects an options object: redisState({ url })');
  }
  const parsed = schema.safeParse(options);
  if (parsed.success) return parsed.data;
  const problems = describeIssues(parsed.error, options).map((line) =>
    line.replace(/^\(options\) /, ''),
  );
  throw new SwitchboardError(`Invalid redisState() options: ${problems.join('; ')}`, {
    code: 'config',
  });
}

/**
 * The default key prefix of a switchboard's deployments: `'switchboard:'` and a hash of their
 * names, endpoints and model names, in sorted order (configuration order does not matter).
 *
 * @example
 * ```ts
 * defaultPrefix([{ name: 'east', endpoint: 'https://east.openai.azure.com/openai/v1/', models: ['gpt-4o'] }]);
 * // 'switchboard:3f1c2a9b7d4e:'
 * ```
 */
export function defaultPrefix(
  deployments: Iterable<{ name: string; endpoint: string; models: Iterable<string> }>,
): string {
  const lines = [...deployments]
    .map((d) => JSON.stringify([d.name, d.endpoint, [...d.models].sort()]))
    .sort();
  const digest = createHash('sha256').update(lines.join('\n')).digest('hex').slice(0, 12);
  return `switchboard:${digest}:`;
}

/*
 * ioredis reads a URL with Node's legacy `url.parse`, then takes every query parameter as an
 * option: a password may come as `redis://:pw@h`, `redis://user:pw@h`, `redis://h/0?password=pw`,
 * and unencoded characters in it (`redis://:p@ss@h`, where the last `@` ends the credentials)
 * still connect. Redaction covers every form: wrong by excess (a host hidden with a password)
 * rather than by default.
 */

/** The credentials of `url`: from after `//` to its last `@`, or undefined. */
function userinfoSpan(url: string): { start: number; end: number } | undefined {
  const slashes = url.indexOf('//');
  if (slashes === -1) return undefined;
  const at = url.lastIndexOf('@');
  return at > slashes ? { start: slashes + 2, end: at } : undefined;
}

/** Query parameters ioredis would read a credential from (Sentinel's own included). */
const SECRET_PARAM = /([?&](?:sentinel)?(?:password|pass|username|user)=)([^&#]*)/gi;

/**
 * `url` with its credentials replaced by `***`, for logs and `inspect`: the user and password
 * before the host (up to the last `@`, as ioredis reads them) and any `password=`, `username=`,
 * `sentinelPassword=` or `sentinelUsername=` query parameter.
 *
 * @example
 * ```ts
 * redactUrl('redis://:hunter2@redis:6379/0'); // 'redis://***@redis:6379/0'
 * redactUrl('redis://redis:6379/0?password=hunter2'); // 'redis://redis:6379/0?password=***'
 * redactUrl('redis://redis:6379?sentinelPassword=s3'); // 'redis://redis:6379?sentinelPassword=***'
 * ```
 */
export function redactUrl(url: string): string {
  const span = userinfoSpan(url);
  const hidden = span === undefined ? url : `${url.slice(0, span.start)}***${url.slice(span.end)}`;
  return hidden.replace(SECRET_PARAM, '$1***');
}

/**
 * A function that takes the password of `url` (every form {@link redactUrl} knows, as written
 * and decoded) out of any text, for log lines and health details that quote what a library said.
 *
 * @example
 * ```ts
 * const scrub = secretScrubber('redis://:hunter2@redis:6379');
 * scrub('WRONGPASS hunter2'); // 'WRONGPASS ***'
 * ```
 */
export function secretScrubber(url: string | undefined): (text: string) => string {
  if (url === undefined) return (text) => text;
  const found: string[] = [];
  const span = userinfoSpan(url);
  if (span !== undefined) {
    const userinfo = url.slice(span.start, span.end);
    const colon = userinfo.indexOf(':');
    found.push(colon === -1 ? userinfo : userinfo.slice(colon + 1));
  }
  for (const m of url.matchAll(SECRET_PARAM)) {
    if (/pass/i.test(m[1]!)) found.push(m[2]!);
  }
  const secrets = new Set<string>();
  for (const secret of found) {
    if (secret === '') continue;
    secrets.add(secret);
    try {
      secrets.add(decodeURIComponent(secret));
    } catch {
      // Not URI-encoded: the raw form is covered.
    }
  }
  if (secrets.size === 0) return (text) => text;
  const ordered = [...secrets].sort((a, b) => b.length - a.length);
  return (text) => ordered.reduce((t, secret) => t.split(secret).join('***'), text);
}

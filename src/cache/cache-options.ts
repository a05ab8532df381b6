import { z } from 'zod';

/**
 * The response cache (`SwitchboardOptions.cache`): exact answers served again to the same
 * tenant, without a deployment, quota or budget. See docs/cache.md.
 *
 * @example
 * ```ts
 * createSwitchboard({ deployments, cache: { ttl: 300_000, maxBytes: 64 * 1024 * 1024 } });
 * ```
 */
export interface CacheOptions {
  /** How long (ms) an answer is served again after it came. */
  ttl: number;
  /** Bytes of answers kept in this process (least recently used go first). Default 64 MiB. */
  maxBytes?: number;
  /** Only calls for these models are cached. Default: every model. */
  models?: string[];
  /** Whether answers that call tools are cached too. Default false. */
  cacheToolCalls?: boolean;
}

/** Default {@link CacheOptions.maxBytes}: 64 MiB. */
export const DEFAULT_CACHE_BYTES = 64 * 1024 * 1024;

const ttlMessage = 'must be a positive whole number of milliseconds, such as 300000';
const bytesMessage = 'must be a positive whole number of bytes, such as 67108864';

/**
 * The zod schema of {@link CacheOptions}.
 *
 * @example
 * ```ts
 * cacheOptionsSchema.parse({ ttl: 60_000 });
 * ```
 */
export const cacheOptionsSchema = z.strictObject(
  {
    ttl: z.number({ error: ttlMessage }).int({ error: ttlMessage }).positive({ error: ttlMessage }),
    maxBytes: z
      .number({ error: bytesMessage })
      .int({ error: bytesMessage })
      .positive({ error: bytesMessage })
      .optional(),
    models: z
      .array(
        z.string({ error: 'must be a model name' }).min(1, { error: 'must be a model name' }),
        {
          error: "must be a list of model names, such as ['gpt-4o-mini']",
        },
      )
      .optional(),
    cacheToolCalls: z.boolean({ error: 'must be true or false' }).optional(),
  },
  { error: 'must be an object such as { ttl: 300000, maxBytes: 67108864 }' },
);

/**
 * The instrumentation scope of every span and metric the switchboard makes: its own instruments
 * (`switchboard.*`) and the OpenTelemetry GenAI client histograms (`gen_ai.client.*`).
 *
 * @example
 * ```ts
 * resourceMetrics.scopeMetrics.find((s) => s.scope.name === METER_NAME);
 * ```
 */
export const METER_NAME = 'nestjs-switchboard';

/**
 * The switchboard's own instruments, by their OpenTelemetry names. A Prometheus exporter writes
 * the dots as underscores and adds `_total` to counters: `switchboard.requests` is scraped as
 * `switchboard_requests_total`. Every counter and gauge is exported from start-up, at 0 for
 * each label set known then, so that a panel shows 0 rather than "no data" until something
 * happens.
 *
 * @example
 * ```ts
 * meter.createCounter(SWITCHBOARD_METRICS.REQUESTS);
 * ```
 */
export const SWITCHBOARD_METRICS = {
  /** Counter {model, deployment, [fallback]}: attempts sent to a deployment (failovers count). */
  REQUESTS: 'switchboard.requests',
  /** Counter {model, deployment, reason}: attempts that failed, by the failure's reason. */
  FAILURES: 'switchboard.failures',
  /** Counter {model, deployment, reason}: further attempts after a failure on that deployment. */
  RETRIES: 'switchboard.retries',
  /** Counter {model, deployment, priority}: attempts sent below the model's most preferred tier. */
  SPILLOVERS: 'switchboard.spillovers',
  /**
   * Counter {model, fallback, deployment, reason}: attempts a fallback model took for `model`;
   * reason `unavailable`, `context_window` or `content_filter`.
   */
  FALLBACKS: 'switchboard.fallbacks',
  /**
   * Counter {model, deployment}: answers an Azure OpenAI provisioned deployment passed on to its
   * standard deployment (spillover), as its `x-ms-spillover-from-<deployment>` header says.
   * Exported from the first spilled answer: which deployments are provisioned ones with
   * spillover is not in the configuration.
   */
  SPILLED_ANSWERS: 'switchboard.spilled_answers',
  /**
   * Counter {model, reason}: calls that failed for their callers, after failover: `no_room` (a
   * 429 the switchboard answered itself, nothing sent), `rate_limit` (the upstream's 429),
   * `other`.
   */
  CALL_FAILURES: 'switchboard.call_failures',
  /**
   * Counter {model}: calls that require tags (`tags`, `x-switchboard-tags`) and failed with the
   * switchboard's own 429 or error while deployments without those tags were passed over: what
   * residency refused, which plain routing would have sent elsewhere.
   */
  TAG_REFUSALS: 'switchboard.tag_refusals',
  /**
   * Counter {model, deployment, tenant}, USD (with `pricing`): what answers cost, priced from the
   * usage each reported. `tenant` is a tenant named in `tenants`, else `other`. Scraped as
   * `switchboard_cost_usd_total`.
   */
  COST: 'switchboard.cost_usd',
  /**
   * Counter {model, deployment, result}: leases of quota a shared store (`redisState`) granted
   * this replica (`granted`), granted shrunk to one call's charge as the shared room ran low
   * (`shrunk`), or handed back unused (`returned`); {level, result} for a level of a quota pool
   * path (`quotaPools`).
   */
  LEASES: 'switchboard.leases',
  /**
   * With `cache`. Counter {model, result}: calls the response cache answered (`hit`), looked up
   * and sent on (`miss`), or was told to leave alone (`bypass`: `cache: false`, state held
   * upstream).
   */
  CACHE: 'switchboard.cache',
  /**
   * Counter {deployment, rule}: rules an upstream leaves open that a deployment learned from its
   * answers, once each (`request-window-1s`: a per-minute request limit enforced per second).
   */
  LEARNED_RULES: 'switchboard.learned_rules',
  /**
   * With `cache` and `pricing`. Counter {model}, USD: what the answers served from the cache cost
   * when they were first made. Scraped as `switchboard_cache_saved_usd_total`.
   */
  CACHE_SAVED: 'switchboard.cache.saved_usd',
  /** Gauge {model}: deployments that would take a call for the model now. */
  HEALTHY_DEPLOYMENTS: 'switchboard.healthy_deployments',
  /** Gauge {model, deployment}: utilization, max of each limit's share, 1 while cooling. */
  UTILIZATION: 'switchboard.utilization',
  /** Gauge {model, deployment, limit}: the limit in force per minute (0: unlimited or not learned yet). */
  QUOTA_LIMIT: 'switchboard.quota.limit',
  /** Gauge {model, deployment, limit}: what is left of the limit as the upstream counts it. */
  QUOTA_REMAINING: 'switchboard.quota.remaining',
  /** Gauge {model, deployment, limit}: what the upstream's last rate-limit headers said was left. */
  UPSTREAM_REMAINING: 'switchboard.upstream.remaining',
  /** Gauge {model}: calls waiting for room (with `queue`; 0 without). */
  QUEUE_LENGTH: 'switchboard.queue.length',
  /** Gauge {model}: seconds the longest-waiting call has waited. */
  QUEUE_OLDEST_WAIT: 'switchboard.queue.oldest_wait_seconds',
  /**
   * With `queue`. Counter {model, lane, tenant}: calls let through to a deployment (their first
   * attempt), at once or after waiting. `tenant` is the call's tenant for the first
   * {@link MAX_TENANT_LABELS} tenants seen, `other` beyond, `none` for calls that name none.
   */
  LANE_ADMITTED: 'switchboard.lane.admitted',
  /** With `queue`. Counter {model, lane, tenant}: calls that joined the queue to wait for room. */
  LANE_QUEUED: 'switchboard.lane.queued',
  /** With `queue`. Counter {model, lane, tenant}: seconds waited in the queue by calls let through. */
  LANE_WAITED: 'switchboard.lane.waited_seconds',
  /**
   * With `queue`. Counter {model, lane, tenant}: batch calls that would have fit but were held
   * back to leave the headroom for interactive traffic.
   */
  LANE_HELD_BACK: 'switchboard.lane.held_back',
  /** With `queue`. Gauge {model, lane, tenant}: calls waiting for room now. */
  LANE_WAITING: 'switchboard.lane.waiting',
  /**
   * Gauge {model, deployment}: calls sent and not yet ended (streams until they end). From
   * start-up where the model has a `maxInFlight` cap, else from its first call.
   */
  IN_FLIGHT: 'switchboard.in_flight',
  /** Gauge {model, deployment}: the `maxInFlight` cap, where one is configured. */
  IN_FLIGHT_LIMIT: 'switchboard.in_flight.limit',
  /**
   * Gauge {model, deployment}: recent time to the first token of streams, in seconds (the
   * estimate latency-aware selection weighs), once measured.
   */
  LATENCY_FIRST_TOKEN: 'switchboard.latency.first_token_seconds',
  /** Gauge {model, deployment}: recent time per output token of the other answers (s), once measured. */
  LATENCY_PER_TOKEN: 'switchboard.latency.per_output_token_seconds',
} as const;

/** Tenants that get their own `tenant` label; calls of later ones are counted as `other`. */
export const MAX_TENANT_LABELS = 20;

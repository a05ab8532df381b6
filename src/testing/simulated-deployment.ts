/**
 * One named simulated deployment: its options, URLs, run-time knobs, fault queue, counters,
 * request log, stored responses and prompt cache.
 */
import { touchPrefix } from './prompt-cache';
import { validateFault, type QueuedFault, type SimulatedFault } from './faults';
import { checkOptions, simulatedDeploymentSchema } from './options';
import {
  DeploymentQuota,
  type OpenAIRulesKind,
  type QuotaFamily,
  type QuotaSettings,
} from './quota';
import { SwitchboardError } from '../switchboard.error';
import type { StoredResponse } from './wire/responses';

/**
 * Configuration of one simulated deployment.
 *
 * @example
 * ```ts
 * const options: SimulatedDeploymentOptions = {
 *   name: 'eastus-gpt',
 *   latency: 20,
 *   chunkDelay: 5,
 *   tpm: 10_000,
 *   rpm: 60,
 *   timeScale: 60, // a one-minute quota window lasts one second
 *   apiKey: 'secret',
 * };
 * ```
 */
export interface SimulatedDeploymentOptions {
  /** Unique name, the first segment of the deployment's URLs (`[A-Za-z0-9._~-]`, not empty). */
  name: string;
  /** Milliseconds before any answer of an API request (default 0). Mutable at run time. */
  latency?: number;
  /** Milliseconds between two SSE events of a streamed answer (default 0). Mutable at run time. */
  chunkDelay?: number;
  /**
   * Tokens per minute; `0` / `undefined` = unlimited. On `/anthropic/` routes a combined
   * input + output limit (beside `itpm` / `otpm`). See {@link SimulatedDeployment} quotas.
   */
  tpm?: number;
  /**
   * Requests per minute; `0` / `undefined` = unlimited. Azure routes enforce `rpm / 6` per 10 s
   * (or `rpm / 60` per 1 s, see `requestWindow`); Anthropic routes a bucket refilled over the
   * minute.
   */
  rpm?: number;
  /** Anthropic routes: input tokens per minute (uncached input + cache writes); 0 = unlimited. */
  itpm?: number;
  /** Anthropic routes: output tokens per minute (actual output); 0 = unlimited. */
  otpm?: number;
  /**
   * Whose documented rules the OpenAI routes (`/openai/`) follow: `'azure'` (default, Azure
   * OpenAI standard deployments), `'azure-ptu'` (Azure provisioned deployments: `tpm` is the
   * input-equivalent capacity per minute) or `'openai'` (OpenAI's API). Anthropic routes follow
   * Anthropic's. See docs/quota-counters.md for each rule and its source.
   */
  rules?: OpenAIRulesKind;
  /** `rules: 'azure-ptu'`: an output token counts this many input tokens (default 1). */
  outputWeight?: number;
  /**
   * `'faithful'` (default): the rules the vendors document (see `rules` and
   * {@link SimulatedDeployment}). `'friendly'`: the
   * simulator's older model, prompt + actual completion charged (or + `max_tokens` with
   * `chargeMaxTokens`), fixed windows on both routes, only the `remaining` headers.
   */
  quota?: 'faithful' | 'friendly';
  /**
   * Faithful Azure routes: the output tokens reserved for a request that sets no
   * `max_completion_tokens` / `max_tokens` / `max_output_tokens` (default 4096).
   */
  inferredMaxTokens?: number;
  /**
   * The RPM window: on faithful Azure routes `'10s'` (default, `rpm / 6`) or `'1s'` (`rpm / 60`);
   * on OpenAI (`rules: 'openai'`) and Anthropic routes, the shorter interval a per-minute request
   * limit is also enforced over, as a bucket of that share of `rpm` (default: none, the minute's
   * bucket alone).
   */
  requestWindow?: '10s' | '1s';
  /** Speed-up of the quota windows: `60` makes the 60 s TPM window last 1 s (default 1). */
  timeScale?: number;
  /** When set, requests must send it as `api-key`, `x-api-key` or `Authorization: Bearer`. */
  apiKey?: string;
  /** Fixed `completion_tokens` / `output_tokens` of every answer (default: estimated). */
  completionTokens?: number;
  /**
   * Friendly quota only: charge `max_tokens` (when the request sets it) instead of the actual
   * completion size (default false). The faithful quota always charges the output cap.
   */
  chargeMaxTokens?: boolean;
  /** Model ids `GET models` lists (default `gpt-4o`, `gpt-4o-mini`, `text-embedding-3-small`). */
  models?: string[];
  /**
   * The context window in tokens (default 0: none): a request whose prompt plus output cap
   * (`max_tokens` and the like) exceeds it gets the API's own 400 (OpenAI and Azure
   * `context_length_exceeded`, Anthropic `prompt is too long`), before any quota counts it.
   * Mutable at run time.
   */
  contextWindow?: number;
  /**
   * The names this deployment answers to as a request's `model`, as an Azure resource knows its
   * deployments (`['gpt4o-east']`): a request naming another gets Azure's 404
   * `DeploymentNotFound`. Default: every name is answered.
   */
  deploymentNames?: string[];
  /**
   * A quota this deployment draws on with the others naming the same pool, as Foundry's Claude
   * deployments of one subscription do across regions: one meter of every limit counts all their
   * requests, and every answer's headers speak of it. Members must state the same limits; the
   * pool's are the first member's (its run-time changes are the pool's).
   */
  quotaPool?: string;
}

/**
 * The limits per minute of one level of a quota pool path (`SimulatedUpstreamOptions.quotaPools`).
 *
 * @example
 * ```ts
 * const org: SimulatedPoolLimits = { tpm: 100_000 };
 * ```
 */
export interface SimulatedPoolLimits {
  tpm?: number;
  rpm?: number;
  itpm?: number;
  otpm?: number;
}

/**
 * Counters of a simulated deployment ({@link SimulatedDeployment.stats}); the same object is
 * updated in place.
 *
 * @example
 * ```ts
 * const { ok, rateLimited, totalTokens } = deployment.stats;
 * ```
 */
export interface SimulatedDeploymentStats {
  /** Requests addressed to the deployment (any path under its name). */
  requests: number;
  /** Complete successful answers. */
  ok: number;
  /** 429 answers, from the quotas or from `status` faults. */
  rateLimited: number;
  /** Every other outcome: error statuses, faults, and requests the client abandoned. */
  failed: number;
  /** The part of `failed` where the connection closed before the answer was complete. */
  aborted: number;
  /** Tokens of the successful answers. */
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** Answers by HTTP status (a dropped or malformed 200 counts as 200). */
  byStatus: Record<number, number>;
  /** Requests being handled right now. */
  inFlight: number;
}

/**
 * One API request a simulated deployment received ({@link SimulatedDeployment.requests}).
 *
 * @example
 * ```ts
 * const last = deployment.requests.at(-1);
 * expect(last?.headers['x-api-key']).toBe('k');
 * ```
 */
export interface SimulatedRequestRecord {
  /** The API addressed: `chat`, `messages`, `responses`, `embeddings`, `models` (list and one
   * model), `response` (retrieve / delete a stored response) or `count_tokens`. */
  api: 'chat' | 'messages' | 'responses' | 'embeddings' | 'models' | 'response' | 'count_tokens';
  /** `model` of the body, `''` when missing. */
  model: string;
  stream: boolean;
  /** Request headers, lower-cased, repeated ones joined with `, `. */
  headers: Record<string, string>;
  /** Parsed JSON body, or the raw text when it is not JSON. */
  body: unknown;
  /** Arrival time, from the upstream's `clock`. */
  at: number;
}

/**
 * Options for an SDK client pointed at a simulated deployment.
 *
 * @example
 * ```ts
 * const options: SimulatedClientOptions = deployment.openaiClientOptions();
 * const openai = new OpenAI({ ...options, timeout: 1000 });
 * ```
 */
export interface SimulatedClientOptions {
  baseURL: string;
  apiKey: string;
  /** 0: retries are the load balancer's job, not the SDK's. */
  maxRetries: number;
}

/**
 * Usage charged by {@link SimulatedDeployment.consume}: another application's requests on the
 * same deployment.
 *
 * @example
 * ```ts
 * const usage: SimulatedUsage = { requests: 3, tokens: 2_400 };
 * ```
 */
interface SimulatedUsage {
  /** Requests (default 1). */
  requests?: number;
  /** Azure routes: tokens charged (default `inputTokens + outputTokens`). Anthropic: combined. */
  tokens?: number;
  /** Anthropic routes: input tokens (default `tokens`). */
  inputTokens?: number;
  /** Anthropic routes: output tokens produced (default 0). */
  outputTokens?: number;
  /** Which limits: `'openai'` (Azure routes, default) or `'anthropic'`. */
  family?: QuotaFamily;
  /** Charge even when it does not fit (default false: refused like a 429). */
  force?: boolean;
}

const MAX_RECORDS = 1000;
/** Stored responses a deployment keeps (oldest dropped first). */
const MAX_STORED_RESPONSES = 10_000;
/** Prompt-cache entries a deployment keeps (oldest dropped first). */
const MAX_CACHE_ENTRIES = 10_000;
/** Output tokens a faithful Azure route reserves for a request without an output cap. */
const DEFAULT_INFERRED_MAX_TOKENS = 4096;
/** Models `GET models` lists when the deployment's options name none. */
const DEFAULT_MODELS = ['gpt-4o', 'gpt-4o-mini', 'text-embedding-3-small'] as const;

interface Waiter {
  predicate: (deployment: SimulatedDeployment) => boolean;
  resolve: () => void;
  reject: (error: Error) => void;
}

/** Per-deployment state the request handler needs and the public API does not expose. */
interface DeploymentInternals {
  clock: () => number;
  faults: QueuedFault[];
  quota: DeploymentQuota;
  sequence: number;
  waiters: Set<Waiter>;
  /** Responses this deployment stored, by id (insertion order = age). */
  responses: Map<string, StoredResponse>;
  /** Prompt-cache prefixes written on this deployment, by key, with their last use. */
  promptCache: Map<string, number>;
  /** The upstream has closed: waiters that do not hold right away reject. */
  closed: boolean;
  /** While set, admitted answers wait here until released (see `holdAnswers`). */
  held: (() => void)[] | undefined;
}

const internals = new WeakMap<SimulatedDeployment, DeploymentInternals>();

/** The internal state of `deployment` (internal). */
export function internalsOf(deployment: SimulatedDeployment): DeploymentInternals {
  const state = internals.get(deployment);
  if (!state) throw new Error('Not a SimulatedDeployment created by SimulatedUpstream');
  return state;
}

function emptyStats(): SimulatedDeploymentStats {
  return {
    requests: 0,
    ok: 0,
    rateLimited: 0,
    failed: 0,
    aborted: 0,
    promptTokens: 0,
    completionTokens: 0,
    totalTokens: 0,
    byStatus: {},
    inFlight: 0,
  };
}

/** Re-checks the {@link SimulatedDeployment.waitFor} conditions of `deployment` (internal). */
export function notifyWaiters(deployment: SimulatedDeployment): void {
  const state = internalsOf(deployment);
  for (const waiter of state.waiters) {
    let done: boolean;
    try {
      done = waiter.predicate(deployment);
    } catch (error) {
      state.waiters.delete(waiter);
      waiter.reject(error instanceof Error ? error : new Error(String(error)));
      continue;
    }
    if (done) {
      state.waiters.delete(waiter);
      waiter.resolve();
    } else if (state.closed) {
      state.waiters.delete(waiter);
      waiter.reject(new Error('SimulatedUpstream closed before the awaited condition held'));
    }
  }
}

/**
 * One named deployment of a {@link SimulatedUpstream}: its URLs, run-time knobs, fault queue,
 * counters and request log. Created by {@link SimulatedUpstream.start}; get it with
 * {@link SimulatedUpstream.deployment}.
 *
 * **Answers.** Chat completions echo the text of the last user message, Messages likewise; with
 * a JSON schema output format (`zodResponseFormat`, `zodOutputFormat`) the answer is a JSON sample
 * of the schema, so `parse()` succeeds. Above `max_tokens` the answer is cut
 * (`finish_reason: 'length'`, `stop_reason: 'max_tokens'`).
 *
 * **Tokens.** Prompt tokens = ceil(characters of all message text, system prompt included / 4),
 * at least 1; completion tokens = `completionTokens` or ceil(answer characters / 4), at least 1,
 * at most `max_tokens`.
 *
 * **Quotas** (`quota: 'faithful'`, the default; every window divided by `timeScale`): each
 * kind of upstream's documented rules, one file each in `rules/` (sources and tables in
 * docs/quota-counters.md). Azure routes (`/openai/`) follow `rules`: by default Azure OpenAI
 * standard deployments, where a request is charged at admission its prompt tokens plus its output
 * cap (`max_completion_tokens` / `max_tokens` / `max_output_tokens`, else `inferredMaxTokens`,
 * default 4096; embeddings: the input only) in a fixed 60 s window that opens with the first
 * request after the previous one expired, with no refund, and requests are limited to
 * `max(1, floor(rpm / 6))` per 10 s (or `rpm / 60` per 1 s with `requestWindow: '1s'`); every
 * answer carries `x-ratelimit-limit-requests` / `-remaining-requests` / `-reset-requests` of that
 * short window and `x-ratelimit-*-tokens` of the minute (resets in seconds, to the millisecond).
 * `rules: 'openai'` enforces OpenAI's continuously refilled buckets, `rules: 'azure-ptu'` Azure's
 * provisioned utilization (`tpm` input-equivalent tokens a minute, output times `outputWeight`,
 * cached input free, no `x-ratelimit-*` headers). Anthropic routes (`/anthropic/`): token buckets
 * refilled continuously over 60 s for `rpm`, `itpm` (uncached input + cache writes; cache reads
 * are free), `otpm` (the output produced, charged when the answer ends; a request is refused on
 * it only when the bucket is empty) and `tpm` (a workspace's combined limit), with
 * `anthropic-ratelimit-{requests,input-tokens,output-tokens,tokens}-{limit,remaining,reset}`
 * (reset as an RFC 3339 time; `tokens-*` is the sum of input and output, or the combined limit,
 * its remaining rounded down to thousands). A request that does not fit gets a 429 with
 * `retry-after` (whole seconds, at least 1; Azure routes also `retry-after-ms`).
 * `quota: 'friendly'` keeps the simulator's older model on both routes: prompt + actual
 * completion (or + `max_tokens` with `chargeMaxTokens`), fixed windows, only the two
 * `x-ratelimit-remaining-*` headers. {@link SimulatedDeployment.consume} charges another
 * application's usage.
 *
 * **Prompt caching**, per deployment, of prefixes of at least 1 024 tokens, each forgotten 5
 * minutes after its last use. Anthropic routes: a request whose system or message blocks carry
 * `cache_control` caches its prompt up to the last marked block: the first such request reports
 * it as `cache_creation_input_tokens`, later ones as `cache_read_input_tokens`. OpenAI routes
 * (chat, responses): every prompt is cached automatically, and the longest cached prefix (1 024
 * tokens, then steps of 128) is reported as `prompt_tokens_details.cached_tokens` /
 * `input_tokens_details.cached_tokens`.
 *
 * **Order of handling** of an API request: body read and recorded, next fault taken from the
 * queue, `latency`, then the fault if any, else authentication (401), validation (400), the
 * context window (400), quota (429) and the answer.
 *
 * @example
 * ```ts
 * const upstream = await SimulatedUpstream.start({ deployments: [{ name: 'a' }] });
 * const a = upstream.deployment('a');
 * const openai = new OpenAI({ baseURL: a.openaiBaseURL, apiKey: 'k', maxRetries: 0 });
 * a.fail({ kind: 'status', status: 503 }, 2);
 * await expect(openai.chat.completions.create(params)).rejects.toThrow();
 * expect(a.stats.byStatus[503]).toBe(1);
 * ```
 */
export class SimulatedDeployment {
  /** The deployment's name. */
  readonly name: string;
  /**
   * Base URL for `new OpenAI({ baseURL })`: `http://host:port/<name>/openai/v1/` (Azure's shape),
   * or `http://host:port/<name>/v1/` with `rules: 'openai'` (OpenAI's own, no `/openai/` in it).
   */
  readonly openaiBaseURL: string;
  /**
   * Base URL for `new Anthropic({ baseURL })` / `new AnthropicFoundry({ baseURL })`:
   * `http://host:port/<name>/anthropic/`.
   */
  readonly anthropicBaseURL: string;
  /**
   * Endpoint for `new AzureOpenAI({ endpoint, apiVersion, deployment })` (the classic
   * `/openai/deployments/<deployment>/chat/completions?api-version=...` routes):
   * `http://host:port/<name>`.
   */
  readonly azureEndpoint: string;
  /** Milliseconds before any answer. */
  latency: number;
  /** Milliseconds between two SSE events. */
  chunkDelay: number;
  /** Tokens per minute (0 = unlimited). Mutable at run time (usage restarts). */
  tpm: number;
  /** Requests per minute (0 = unlimited). Mutable at run time (usage restarts). */
  rpm: number;
  /** Anthropic input tokens per minute (0 = unlimited). Mutable at run time. */
  itpm: number;
  /** Anthropic output tokens per minute (0 = unlimited). Mutable at run time. */
  otpm: number;
  /** Whose rules the OpenAI routes follow (see {@link SimulatedDeploymentOptions.rules}). */
  readonly rules: OpenAIRulesKind;
  /** Azure PTU: input-equivalent tokens per output token. */
  readonly outputWeight: number;
  /** Which quota rules apply (see {@link SimulatedDeploymentOptions.quota}). Mutable. */
  quota: 'faithful' | 'friendly';
  /** Output tokens reserved when a request sets no cap (faithful Azure routes). Mutable. */
  inferredMaxTokens: number;
  /** The faithful Azure RPM window. */
  readonly requestWindow: '10s' | '1s';
  /** Required API key, if any. */
  apiKey: string | undefined;
  /** Fixed completion size, if any. */
  completionTokens: number | undefined;
  /** Friendly quota: charge `max_tokens` instead of the completion. */
  chargeMaxTokens: boolean;
  /** The context window in tokens (0 = none). */
  contextWindow: number;
  /** Speed-up of the quota windows. */
  readonly timeScale: number;
  /** Model ids `GET models` lists. */
  models: string[];
  /** The `model` names it answers to (undefined: every name). Mutable. */
  deploymentNames: string[] | undefined;
  /**
   * Azure routes: every answer says it was passed on by spillover, as Azure's provisioned
   * deployments do (`x-ms-spillover-from-<model>: true`). Default false. Mutable.
   */
  spillover = false;
  /** Counters, updated in place (see {@link SimulatedDeploymentStats}). */
  readonly stats: SimulatedDeploymentStats = emptyStats();
  /** The last 1000 API requests, oldest first. */
  readonly requests: SimulatedRequestRecord[] = [];

  /**
   * @internal Use {@link SimulatedUpstream.start}; `origin` is `http://host:port`.
   */
  constructor(
    options: SimulatedDeploymentOptions,
    origin: string,
    clock: () => number,
    pools: Map<string, DeploymentQuota> = new Map(),
    levels: Readonly<Record<string, SimulatedPoolLimits>> = {},
  ) {
    options = checkOptions(simulatedDeploymentSchema, options, 'simulated deployment options');
    const timeScale = options.timeScale ?? 1;
    this.name = options.name;
    // OpenAI's own API has no `/openai/` segment (api.openai.com/v1): it tells its rules apart.
    this.openaiBaseURL =
      options.rules === 'openai'
        ? `${origin}/${options.name}/v1/`
        : `${origin}/${options.name}/openai/v1/`;
    this.anthropicBaseURL = `${origin}/${options.name}/anthropic/`;
    this.azureEndpoint = `${origin}/${options.name}`;
    this.latency = options.latency ?? 0;
    this.chunkDelay = options.chunkDelay ?? 0;
    this.tpm = options.tpm ?? 0;
    this.rpm = options.rpm ?? 0;
    this.itpm = options.itpm ?? 0;
    this.otpm = options.otpm ?? 0;
    this.rules = options.rules ?? 'azure';
    this.outputWeight = options.outputWeight ?? 1;
    this.quota = options.quota ?? 'faithful';
    this.inferredMaxTokens = options.inferredMaxTokens ?? DEFAULT_INFERRED_MAX_TOKENS;
    this.requestWindow = options.requestWindow ?? '10s';
    this.apiKey = options.apiKey;
    this.completionTokens =
      options.completionTokens === undefined ? undefined : Math.floor(options.completionTokens);
    this.chargeMaxTokens = options.chargeMaxTokens ?? false;
    this.contextWindow = options.contextWindow ?? 0;
    this.timeScale = timeScale;
    this.models = [...(options.models ?? DEFAULT_MODELS)];
    this.deploymentNames = options.deploymentNames && [...options.deploymentNames];
    // The members of a quota pool share the first member's meters.
    const pooled = options.quotaPool === undefined ? undefined : pools.get(options.quotaPool);
    const quota =
      pooled ??
      new DeploymentQuota(
        () => this.quotaSettings(),
        timeScale,
        options.requestWindow === undefined
          ? undefined
          : this.requestWindow === '1s'
            ? 1_000
            : 10_000,
      );
    if (options.quotaPool !== undefined && pooled === undefined) {
      pools.set(options.quotaPool, quota);
      const parts = options.quotaPool.split('/');
      for (let i = 1; i <= parts.length; i++) {
        const path = parts.slice(0, i).join('/');
        const limits = Object.hasOwn(levels, path) ? levels[path] : undefined;
        if (limits === undefined) continue;
        // A level counts by its first member's rules, with its own limits (none: unlimited).
        const key = `\u0000${path}`;
        const level =
          pools.get(key) ??
          new DeploymentQuota(
            () => ({ ...this.quotaSettings(), tpm: 0, rpm: 0, itpm: 0, otpm: 0, ...limits }),
            timeScale,
            undefined,
          );
        pools.set(key, level);
        quota.levels.push(level);
      }
    }
    internals.set(this, {
      clock,
      faults: [],
      quota,
      sequence: 0,
      waiters: new Set(),
      responses: new Map(),
      promptCache: new Map(),
      closed: false,
      held: undefined,
    });
  }

  /**
   * Queues `fault` for the next `times` API requests (default 1; `Infinity` = every request until
   * {@link clearFaults}). Faults are played in FIFO order, before any other handling.
   *
   * @example
   * ```ts
   * deployment.fail({ kind: 'hang' }).fail({ kind: 'status', status: 500 }, 2);
   * ```
   */
  fail(fault: SimulatedFault, times = 1): this {
    validateFault(fault, times);
    internalsOf(this).faults.push({ fault: { ...fault }, remaining: times });
    return this;
  }

  /**
   * Drops every queued fault.
   *
   * @example
   * ```ts
   * deployment.fail({ kind: 'reset' }, Infinity);
   * // ...
   * deployment.clearFaults();
   * ```
   */
  clearFaults(): this {
    internalsOf(this).faults.length = 0;
    return this;
  }

  /**
   * How many requests the queued faults will still affect (`Infinity` when one repeats forever).
   *
   * @example
   * ```ts
   * deployment.fail({ kind: 'reset' }, 2);
   * deployment.pendingFaults; // => 2
   * ```
   */
  get pendingFaults(): number {
    return internalsOf(this).faults.reduce((sum, entry) => sum + entry.remaining, 0);
  }

  /**
   * Zeroes the counters (except `inFlight`, a live gauge) and empties the request log.
   *
   * @example
   * ```ts
   * beforeEach(() => deployment.resetStats());
   * ```
   */
  resetStats(): void {
    const inFlight = this.stats.inFlight;
    for (const key of Object.keys(this.stats.byStatus)) delete this.stats.byStatus[Number(key)];
    Object.assign(this.stats, { ...emptyStats(), byStatus: this.stats.byStatus, inFlight });
    this.requests.length = 0;
  }

  /**
   * Forgets the quota usage: the next request opens fresh TPM / RPM windows.
   *
   * @example
   * ```ts
   * deployment.resetQuotas();
   * ```
   */
  resetQuotas(): void {
    internalsOf(this).quota.reset();
  }

  /**
   * Charges usage by another application that shares this deployment's quota, outside the
   * switchboard, now: `requests` (default 1) and `tokens` on Azure routes (`family: 'openai'`,
   * the default), or `inputTokens` / `outputTokens` on Anthropic routes. Like that
   * application's own requests, it is refused when it does not fit, unless `force` is set.
   * Returns whether it was charged and, when not, how long until it would fit.
   *
   * @example
   * ```ts
   * // Another application takes half of a 10 000 TPM deployment's minute.
   * const { admitted } = deployment.consume({ tokens: 5_000 });
   * ```
   */
  consume(usage: SimulatedUsage): { admitted: boolean; retryAfterMs: number } {
    const requests = usage.requests ?? 1;
    const family = usage.family ?? 'openai';
    for (const [key, value] of Object.entries({ ...usage, requests })) {
      if (key === 'family' || key === 'force') continue;
      if (typeof value !== 'number' || !(Number.isFinite(value) && value >= 0)) {
        throw new SwitchboardError(
          `Invalid consume() usage: ${key} must be a number >= 0, got ${String(value)}`,
        );
      }
    }
    const input = usage.inputTokens ?? usage.tokens ?? 0;
    const output = usage.outputTokens ?? 0;
    const state = internalsOf(this);
    const now = state.clock();
    const admission = state.quota.admit(
      family,
      {
        requests,
        tokens: usage.tokens ?? input + output,
        inputTokens: input,
        outputTokens: output,
      },
      now,
      usage.force === true,
    );
    // The usage is done: rules that count actual output count it now.
    if (admission.ok) state.quota.settle(admission.charge, output, now);
    return { admitted: admission.ok, retryAfterMs: admission.ok ? 0 : admission.retryMs };
  }

  /**
   * The rate-limit headers an answer of `family` would carry now (what the quota reports).
   *
   * @example
   * ```ts
   * deployment.rateLimitHeaders()['x-ratelimit-remaining-tokens']; // => 10000
   * ```
   */
  rateLimitHeaders(family: QuotaFamily = 'openai'): Record<string, string | number> {
    const state = internalsOf(this);
    return state.quota.headers(family, state.clock());
  }

  private quotaSettings(): QuotaSettings {
    return {
      quota: this.quota,
      rpm: this.rpm,
      tpm: this.tpm,
      itpm: this.itpm,
      otpm: this.otpm,
      inferredMaxTokens: this.inferredMaxTokens,
      chargeMaxTokens: this.chargeMaxTokens,
      rules: this.rules,
      outputWeight: this.outputWeight,
    };
  }

  /**
   * Holds every answer admitted from now on after its quota charge, as a model still generating
   * would, until {@link releaseAnswer} lets it go: the upstream counts calls in the order they
   * arrive and answers them in any order.
   *
   * @example
   * ```ts
   * deployment.holdAnswers();
   * // ... send calls, wait for deployment.heldAnswers to reach their number ...
   * deployment.releaseAnswer(3); // the fourth call admitted is answered first
   * ```
   */
  holdAnswers(): void {
    internalsOf(this).held ??= [];
  }

  /** Answers held by {@link holdAnswers} and not released yet (released ones leave a gap). */
  get heldAnswers(): number {
    return internalsOf(this).held?.length ?? 0;
  }

  /**
   * Lets the held answer admitted `index`-th (from 0, in admission order) go; a released or
   * missing one is ignored. Returns whether it was held.
   */
  releaseAnswer(index: number): boolean {
    const held = internalsOf(this).held;
    const release = held?.[index];
    if (!held || release === undefined) return false;
    held[index] = () => undefined;
    release();
    return true;
  }

  /** Stops holding answers and lets every held one go. */
  releaseAll(): void {
    const state = internalsOf(this);
    const held = state.held ?? [];
    state.held = undefined;
    for (const release of held) release();
  }

  /**
   * Forgets the stored responses (as if they had expired) and the prompt cache.
   *
   * @example
   * ```ts
   * deployment.forgetResponses();
   * // a chained call with previous_response_id now gets a 404
   * ```
   */
  forgetResponses(): void {
    internalsOf(this).responses.clear();
    internalsOf(this).promptCache.clear();
  }

  /**
   * Ids of the responses this deployment stored, oldest first (at most the last 10 000).
   *
   * @example
   * ```ts
   * expect(deployment.storedResponseIds).toContain(response.id);
   * ```
   */
  get storedResponseIds(): string[] {
    return [...internalsOf(this).responses.keys()];
  }

  /**
   * Resolves once `predicate(this)` holds, checked now and whenever a request arrives, has its
   * status sent, or ends; rejects if the upstream closes first. Sets no timer.
   *
   * @example
   * ```ts
   * const pending = openai.chat.completions.create(params);
   * await deployment.waitFor((d) => d.stats.inFlight === 1);
   * ```
   */
  waitFor(predicate: (deployment: SimulatedDeployment) => boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      internalsOf(this).waiters.add({ predicate, resolve, reject });
      notifyWaiters(this);
    });
  }

  /**
   * Resolves once no request is in flight.
   *
   * @example
   * ```ts
   * await deployment.whenIdle();
   * expect(deployment.stats.aborted).toBe(1);
   * ```
   */
  whenIdle(): Promise<void> {
    return this.waitFor((deployment) => deployment.stats.inFlight === 0);
  }

  /**
   * Options for `new OpenAI(...)` pointed at this deployment (`maxRetries: 0`; the API key is the
   * deployment's or `'simulated'`).
   *
   * @example
   * ```ts
   * const openai = new OpenAI(deployment.openaiClientOptions());
   * ```
   */
  openaiClientOptions(): SimulatedClientOptions {
    return { baseURL: this.openaiBaseURL, apiKey: this.apiKey ?? 'simulated', maxRetries: 0 };
  }

  /**
   * Options for `new Anthropic(...)` or `new AnthropicFoundry(...)` pointed at this deployment.
   *
   * @example
   * ```ts
   * const anthropic = new AnthropicFoundry(deployment.anthropicClientOptions());
   * ```
   */
  anthropicClientOptions(): SimulatedClientOptions {
    return { baseURL: this.anthropicBaseURL, apiKey: this.apiKey ?? 'simulated', maxRetries: 0 };
  }
}

/** Stores `response` under `id` on `deployment`, dropping the oldest past the bound (internal). */
export function storeResponse(
  deployment: SimulatedDeployment,
  id: string,
  response: StoredResponse,
): void {
  const responses = internalsOf(deployment).responses;
  responses.set(id, response);
  if (responses.size > MAX_STORED_RESPONSES) {
    responses.delete(responses.keys().next().value as string);
  }
}

/** Marks the prefix `key` cached on `deployment` and used at `now` (internal). */
export function usePromptCache(deployment: SimulatedDeployment, key: string, now: number): void {
  touchPrefix(internalsOf(deployment).promptCache, key, now, MAX_CACHE_ENTRIES);
}

/** Appends `record` to the request log of `deployment`, keeping the last 1000 (internal). */
export function recordRequest(
  deployment: SimulatedDeployment,
  record: SimulatedRequestRecord,
): void {
  deployment.requests.push(record);
  if (deployment.requests.length > MAX_RECORDS) {
    deployment.requests.splice(0, deployment.requests.length - MAX_RECORDS);
  }
}

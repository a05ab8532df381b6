/**
 * A fake LLM upstream for tests and demos: one `node:http` server that serves named simulated
 * deployments in both the OpenAI Chat Completions and the Anthropic Messages wire formats, with
 * latency, quotas (Azure-like TPM / RPM) and injectable faults.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

import {
  anthropicErrorBody,
  malformedMessageFrame,
  messageBody,
  messageFrames,
  readMessagesRequest,
} from './anthropic-wire';
import {
  chatCompletionBody,
  chatCompletionFrames,
  malformedChatFrame,
  openaiErrorBody,
  readChatRequest,
} from './openai-wire';
import { isRecord, type CompletionPlan, type PlanResult } from './wire-common';

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
  /** Tokens per minute; `0` / `undefined` = unlimited. See {@link SimulatedDeployment} quotas. */
  tpm?: number;
  /** Requests per minute, enforced as `rpm / 6` per 10 s; `0` / `undefined` = unlimited. */
  rpm?: number;
  /** Speed-up of the quota windows: `60` makes the 60 s TPM window last 1 s (default 1). */
  timeScale?: number;
  /** When set, requests must send it as `api-key`, `x-api-key` or `Authorization: Bearer`. */
  apiKey?: string;
  /** Fixed `completion_tokens` / `output_tokens` of every answer (default: estimated). */
  completionTokens?: number;
  /**
   * Charge `max_tokens` (when the request sets it) instead of the actual completion size against
   * the TPM quota, as Azure OpenAI does (default false).
   */
  chargeMaxTokens?: boolean;
}

/**
 * A failure a simulated deployment plays instead of its normal answer; queue them with
 * {@link SimulatedDeployment.fail}.
 *
 * - `status`: an error answer in the provider's shape with `status`, optional `retry-after`
 *   (seconds) / `retry-after-ms` headers and `message`.
 * - `reset`: the TCP connection is reset before any answer.
 * - `hang`: no answer at all, until the client gives up or the upstream closes.
 * - `drop-mid-stream`: streamed requests get `afterEvents` SSE events (default 2, always fewer
 *   than the full answer) before the connection is destroyed; other requests get the headers and
 *   half of the body.
 * - `malformed`: a 200 whose JSON body is cut short, or for streams one good event followed by a
 *   `data:` line with broken JSON.
 *
 * @example
 * ```ts
 * deployment.fail({ kind: 'status', status: 429, retryAfter: 1, retryAfterMs: 250 });
 * deployment.fail({ kind: 'reset' }, 3);
 * deployment.fail({ kind: 'drop-mid-stream', afterEvents: 4 });
 * ```
 */
export type SimulatedFault =
  | { kind: 'status'; status: number; retryAfter?: number; retryAfterMs?: number; message?: string }
  | { kind: 'reset' }
  | { kind: 'hang' }
  | { kind: 'drop-mid-stream'; afterEvents?: number }
  | { kind: 'malformed' };

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
  api: 'chat' | 'messages';
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
 * Options of {@link SimulatedUpstream.start}.
 *
 * @example
 * ```ts
 * let now = 0;
 * const options: SimulatedUpstreamOptions = {
 *   deployments: [{ name: 'a', rpm: 6 }],
 *   clock: () => now, // drive the quota windows by hand
 * };
 * ```
 */
export interface SimulatedUpstreamOptions {
  deployments: SimulatedDeploymentOptions[];
  /** Interface to listen on (default `127.0.0.1`). */
  host?: string;
  /** Port (default 0: a free port). */
  port?: number;
  /** Time source of the quota windows, request records and `created` fields (default Date.now). */
  clock?: () => number;
  /**
   * How long (ms) an idle keep-alive connection stays open (default 5 000, Node's own). Clients
   * such as undici close theirs a little earlier, by the server's `Keep-Alive` hint, on a coarse
   * timer: a pause near this value races the two, and a request sent on a connection the server
   * has just closed fails with `other side closed`. Real endpoints keep idle connections for
   * minutes; raise it for tests that pause between bursts.
   */
  keepAliveTimeout?: number;
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

const MAX_RECORDS = 1000;
/** Pending connections the server accepts (the kernel caps it at `net.core.somaxconn`). */
const LISTEN_BACKLOG = 8192;
const MAX_BODY_BYTES = 32 * 1024 * 1024;
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._~-]*$/;

type Provider = 'openai' | 'anthropic';
type Outcome = 'ok' | 'rateLimited' | 'failed' | 'aborted';

interface QueuedFault {
  fault: SimulatedFault;
  remaining: number;
}

interface Waiter {
  predicate: (deployment: SimulatedDeployment) => boolean;
  resolve: () => void;
  reject: (error: Error) => void;
}

/** A fixed quota window that starts with the first request after the previous one expired. */
class QuotaWindow {
  private start = -Infinity;
  used = 0;

  constructor(private readonly lengthMs: number) {}

  roll(now: number): void {
    if (now >= this.start + this.lengthMs || now < this.start) {
      this.start = now;
      this.used = 0;
    }
  }

  remainingMs(now: number): number {
    return Math.max(0, this.start + this.lengthMs - now);
  }

  reset(): void {
    this.start = -Infinity;
    this.used = 0;
  }
}

/** Per-deployment state the request handler needs and the public API does not expose. */
interface DeploymentInternals {
  clock: () => number;
  faults: QueuedFault[];
  requestWindow: QuotaWindow;
  tokenWindow: QuotaWindow;
  sequence: number;
  waiters: Set<Waiter>;
  /** The upstream has closed: waiters that do not hold right away reject. */
  closed: boolean;
}

const internals = new WeakMap<SimulatedDeployment, DeploymentInternals>();

function internalsOf(deployment: SimulatedDeployment): DeploymentInternals {
  const state = internals.get(deployment);
  if (!state) throw new Error('Not a SimulatedDeployment created by SimulatedUpstream');
  return state;
}

function checkNonNegative(value: number | undefined, what: string): void {
  if (value !== undefined && !(Number.isFinite(value) && value >= 0)) {
    throw new RangeError(`${what} must be a finite number >= 0, got ${String(value)}`);
  }
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

function notify(deployment: SimulatedDeployment): void {
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
 * **Quotas.** RPM allows `max(1, floor(rpm / 6))` requests per 10 s window, TPM allows `tpm`
 * tokens per 60 s window; both windows are divided by `timeScale` and start with the first request
 * after the previous window expired. A valid request is admitted (and charged prompt + completion
 * tokens, or prompt + `max_tokens` with `chargeMaxTokens`) when it fits both, else it gets a 429
 * with `retry-after` (whole seconds, at least 1) and `retry-after-ms` until the window ends.
 * Admitted answers carry `x-ratelimit-remaining-requests` / `x-ratelimit-remaining-tokens`.
 *
 * **Order of handling** of an API request: body read and recorded, next fault taken from the
 * queue, `latency`, then the fault if any, else authentication (401), validation (400), quota
 * (429) and the answer.
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
  /** Base URL for `new OpenAI({ baseURL })`: `http://host:port/<name>/openai/v1/`. */
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
  /** Tokens per minute (0 = unlimited). */
  tpm: number;
  /** Requests per minute (0 = unlimited). */
  rpm: number;
  /** Required API key, if any. */
  apiKey: string | undefined;
  /** Fixed completion size, if any. */
  completionTokens: number | undefined;
  /** Charge `max_tokens` instead of the completion against the TPM quota. */
  chargeMaxTokens: boolean;
  /** Speed-up of the quota windows. */
  readonly timeScale: number;
  /** Counters, updated in place (see {@link SimulatedDeploymentStats}). */
  readonly stats: SimulatedDeploymentStats = emptyStats();
  /** The last 1000 API requests, oldest first. */
  readonly requests: SimulatedRequestRecord[] = [];

  /**
   * @internal Use {@link SimulatedUpstream.start}; `origin` is `http://host:port`.
   */
  constructor(options: SimulatedDeploymentOptions, origin: string, clock: () => number) {
    if (typeof options.name !== 'string' || !NAME_PATTERN.test(options.name)) {
      throw new Error(
        `Invalid simulated deployment name ${JSON.stringify(options.name)}: ` +
          'use letters, digits, ".", "_", "~" or "-"',
      );
    }
    checkNonNegative(options.latency, 'latency');
    checkNonNegative(options.chunkDelay, 'chunkDelay');
    checkNonNegative(options.tpm, 'tpm');
    checkNonNegative(options.rpm, 'rpm');
    checkNonNegative(options.completionTokens, 'completionTokens');
    const timeScale = options.timeScale ?? 1;
    if (!(Number.isFinite(timeScale) && timeScale > 0)) {
      throw new RangeError(`timeScale must be a finite number > 0, got ${String(timeScale)}`);
    }
    this.name = options.name;
    this.openaiBaseURL = `${origin}/${options.name}/openai/v1/`;
    this.anthropicBaseURL = `${origin}/${options.name}/anthropic/`;
    this.azureEndpoint = `${origin}/${options.name}`;
    this.latency = options.latency ?? 0;
    this.chunkDelay = options.chunkDelay ?? 0;
    this.tpm = options.tpm ?? 0;
    this.rpm = options.rpm ?? 0;
    this.apiKey = options.apiKey;
    this.completionTokens =
      options.completionTokens === undefined ? undefined : Math.floor(options.completionTokens);
    this.chargeMaxTokens = options.chargeMaxTokens ?? false;
    this.timeScale = timeScale;
    internals.set(this, {
      clock,
      faults: [],
      requestWindow: new QuotaWindow(10_000 / timeScale),
      tokenWindow: new QuotaWindow(60_000 / timeScale),
      sequence: 0,
      waiters: new Set(),
      closed: false,
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
    if (!(times === Infinity || (Number.isInteger(times) && times > 0))) {
      throw new RangeError(`times must be a positive integer or Infinity, got ${String(times)}`);
    }
    switch (fault.kind) {
      case 'status':
        if (!Number.isInteger(fault.status) || fault.status < 400 || fault.status > 599) {
          throw new RangeError(`fault status must be an integer in 400..599, got ${fault.status}`);
        }
        checkNonNegative(fault.retryAfter, 'retryAfter');
        checkNonNegative(fault.retryAfterMs, 'retryAfterMs');
        break;
      case 'drop-mid-stream':
        checkNonNegative(fault.afterEvents, 'afterEvents');
        break;
      case 'reset':
      case 'hang':
      case 'malformed':
        break;
      default:
        throw new TypeError(
          `Unknown fault kind ${JSON.stringify((fault as { kind: unknown }).kind)}`,
        );
    }
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
    internalsOf(this).requestWindow.reset();
    internalsOf(this).tokenWindow.reset();
  }

  /**
   * Resolves once `predicate(this)` holds, checked now and whenever a request arrives or ends;
   * rejects if the upstream closes first. Sets no timer.
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
      notify(this);
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

/** Resolves true after `ms`, or false as soon as `signal` aborts. The timer is unref'd. */
function delay(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  if (!(ms > 0)) return Promise.resolve(true);
  return new Promise<boolean>((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    timer.unref();
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

function headerRecord(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    out[key.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

function isAuthorized(headers: Record<string, string>, key: string): boolean {
  const bearer = /^bearer\s+(.+)$/i.exec(headers['authorization'] ?? '');
  return headers['api-key'] === key || headers['x-api-key'] === key || bearer?.[1] === key;
}

async function readBody(
  req: IncomingMessage,
): Promise<{ text: string; tooLarge: boolean } | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    }
  } catch {
    return undefined;
  }
  return { text: Buffer.concat(chunks).toString('utf8'), tooLarge: size > MAX_BODY_BYTES };
}

/** One request/response pair in flight, with its once-only outcome. */
class Exchange {
  readonly controller = new AbortController();
  private settled = false;

  constructor(
    readonly deployment: SimulatedDeployment | undefined,
    readonly provider: Provider,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    private readonly active: Set<Exchange>,
  ) {
    active.add(this);
    if (deployment) {
      deployment.stats.requests++;
      deployment.stats.inFlight++;
    }
    res.on('close', () => this.abort());
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get done(): boolean {
    return this.settled || this.res.destroyed;
  }

  /** The connection went away (client abort, or upstream closing) before the answer ended. */
  abort(): void {
    if (!this.settled) this.settle('aborted');
    this.controller.abort();
  }

  settle(outcome: Outcome, plan?: CompletionPlan): void {
    if (this.settled) return;
    this.settled = true;
    this.active.delete(this);
    const deployment = this.deployment;
    if (!deployment) return;
    const stats = deployment.stats;
    stats.inFlight = Math.max(0, stats.inFlight - 1);
    if (outcome === 'ok') {
      stats.ok++;
      if (plan) {
        stats.promptTokens += plan.promptTokens;
        stats.completionTokens += plan.completionTokens;
        stats.totalTokens += plan.promptTokens + plan.completionTokens;
      }
    } else if (outcome === 'rateLimited') {
      stats.rateLimited++;
    } else {
      stats.failed++;
      if (outcome === 'aborted') stats.aborted++;
    }
    notify(deployment);
  }

  countStatus(status: number): void {
    if (!this.deployment) return;
    const byStatus = this.deployment.stats.byStatus;
    byStatus[status] = (byStatus[status] ?? 0) + 1;
  }

  /** Sends a complete JSON answer; errors settle as `failed` (429: `rateLimited`). */
  sendJson(
    status: number,
    body: unknown,
    headers: Record<string, string | number> = {},
    plan?: CompletionPlan,
  ): void {
    if (this.done) return;
    const payload = JSON.stringify(body);
    this.res.writeHead(status, {
      ...headers,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(payload),
    });
    this.res.end(payload);
    this.countStatus(status);
    this.settle(status < 400 ? 'ok' : status === 429 ? 'rateLimited' : 'failed', plan);
  }

  sendError(
    status: number,
    message: string,
    options: {
      headers?: Record<string, string | number>;
      type?: string;
      code?: string | null;
      param?: string | null;
    } = {},
  ): void {
    const requestId = this.res.getHeader('request-id');
    const body =
      this.provider === 'anthropic'
        ? anthropicErrorBody(status, message, typeof requestId === 'string' ? requestId : undefined)
        : openaiErrorBody(status, message, options);
    this.sendJson(status, body, options.headers);
  }

  /** Writes one chunk and waits until it is handed to the socket; false if the exchange ended. */
  write(chunk: string | Buffer): Promise<boolean> {
    if (this.done || this.signal.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const onAbort = (): void => resolve(false);
      this.signal.addEventListener('abort', onAbort, { once: true });
      this.res.write(chunk, (error) => {
        this.signal.removeEventListener('abort', onAbort);
        resolve(!error);
      });
    });
  }

  /** Ends the exchange as failed and destroys the connection (a reset if `reset`). */
  destroyConnection(reset: boolean): void {
    this.settle('failed');
    const socket = this.req.socket;
    if (reset && typeof socket.resetAndDestroy === 'function' && !socket.destroyed) {
      try {
        socket.resetAndDestroy();
        return;
      } catch {
        // fall back to a plain destroy
      }
    }
    socket.destroy();
  }
}

type Route = { kind: 'api'; api: 'chat' | 'messages' } | { kind: 'not-found' };

function matchRoute(provider: Provider, rest: string[]): Route {
  const path = rest.join('/');
  if (provider === 'openai') {
    if (path === 'v1/chat/completions' || path === 'chat/completions') {
      return { kind: 'api', api: 'chat' };
    }
    if (
      rest.length === 4 &&
      rest[0] === 'deployments' &&
      rest[2] === 'chat' &&
      rest[3] === 'completions'
    ) {
      return { kind: 'api', api: 'chat' };
    }
  } else if (path === 'v1/messages') {
    return { kind: 'api', api: 'messages' };
  }
  return { kind: 'not-found' };
}

/**
 * The fake LLM upstream: a `node:http` server on `127.0.0.1` (a free port by default) serving the
 * given {@link SimulatedDeployment}s, each under `/<name>/openai/v1/` (Chat Completions,
 * `POST chat/completions`) and `/<name>/anthropic/` (Messages, `POST v1/messages`), plus the Azure
 * OpenAI classic route `/<name>/openai/deployments/<any>/chat/completions`. Unknown deployments or
 * paths get a 404 in the provider's error shape. Every answer of a deployment carries
 * `x-simulated-deployment: <name>`, and any `x-request-echo` request header is echoed back.
 *
 * @example
 * ```ts
 * const upstream = await SimulatedUpstream.start({
 *   deployments: [{ name: 'east', latency: 10 }, { name: 'west', tpm: 1000, timeScale: 60 }],
 * });
 * const east = upstream.deployment('east');
 * const openai = new OpenAI({ baseURL: east.openaiBaseURL, apiKey: 'k', maxRetries: 0 });
 * const completion = await openai.chat.completions.create({
 *   model: 'gpt-4o',
 *   messages: [{ role: 'user', content: 'ping' }],
 * });
 * completion.choices[0]?.message.content; // => 'ping'
 * await upstream.close();
 * ```
 */
export class SimulatedUpstream {
  /** `http://host:port`, without trailing slash. */
  readonly url: string;
  /** The port the server listens on. */
  readonly port: number;
  /** The deployments, in the order of the options. */
  readonly deployments: readonly SimulatedDeployment[];

  private readonly byName: ReadonlyMap<string, SimulatedDeployment>;
  private readonly sockets = new Set<Socket>();
  private readonly active = new Set<Exchange>();
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly server: Server,
    options: SimulatedUpstreamOptions,
    host: string,
  ) {
    const address = server.address() as AddressInfo;
    const urlHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
    this.port = address.port;
    this.url = `http://${urlHost.includes(':') ? `[${urlHost}]` : urlHost}:${address.port}`;
    const clock = options.clock ?? Date.now;
    this.deployments = options.deployments.map(
      (deployment) => new SimulatedDeployment(deployment, this.url, clock),
    );
    this.byName = new Map(this.deployments.map((deployment) => [deployment.name, deployment]));
    server.on('connection', (socket: Socket) => {
      socket.setNoDelay(true);
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      void this.handle(req, res);
    });
  }

  /**
   * Starts the server and resolves once it listens.
   *
   * @example
   * ```ts
   * const upstream = await SimulatedUpstream.start({
   *   deployments: [{ name: 'a' }, { name: 'b', latency: 50 }],
   * });
   * ```
   */
  static async start(options: SimulatedUpstreamOptions): Promise<SimulatedUpstream> {
    const names = new Set<string>();
    for (const deployment of options.deployments) {
      if (names.has(deployment.name)) {
        throw new Error(`Duplicate simulated deployment name '${deployment.name}'`);
      }
      names.add(deployment.name);
    }
    const host = options.host ?? '127.0.0.1';
    checkNonNegative(options.keepAliveTimeout, 'keepAliveTimeout');
    const server = createServer();
    if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // Node's default accept backlog (511) overflows when a load test opens thousands of
      // connections at once: the kernel then resets them, and the client sees ECONNRESET.
      server.listen({ port: options.port ?? 0, host, backlog: LISTEN_BACKLOG }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    try {
      return new SimulatedUpstream(server, options, host);
    } catch (error) {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      throw error;
    }
  }

  /**
   * The deployment called `name`; throws for unknown names.
   *
   * @example
   * ```ts
   * const a = upstream.deployment('a');
   * ```
   */
  deployment(name: string): SimulatedDeployment {
    const deployment = this.byName.get(name);
    if (!deployment) {
      const known = [...this.byName.keys()].map((n) => `'${n}'`).join(', ') || 'none';
      throw new Error(`Unknown simulated deployment '${name}' (known: ${known})`);
    }
    return deployment;
  }

  /**
   * Clears the faults, counters, request logs and quota windows of every deployment (latency and
   * the other knobs stay as they are).
   *
   * @example
   * ```ts
   * afterEach(() => upstream.reset());
   * ```
   */
  reset(): void {
    for (const deployment of this.deployments) {
      deployment.clearFaults();
      deployment.resetStats();
      deployment.resetQuotas();
    }
  }

  /**
   * Stops the server and destroys every open connection, hanging requests included, so it
   * resolves promptly; pending {@link SimulatedDeployment.waitFor} promises whose condition does
   * not hold then reject. Idempotent.
   *
   * @example
   * ```ts
   * afterAll(() => upstream.close());
   * ```
   */
  close(): Promise<void> {
    if (!this.closing) {
      this.closing = new Promise<void>((resolve) => {
        this.server.close(() => resolve());
        for (const exchange of [...this.active]) exchange.abort();
        this.server.closeAllConnections();
        for (const socket of this.sockets) socket.destroy();
      }).then(() => {
        for (const deployment of this.deployments) {
          internalsOf(deployment).closed = true;
          notify(deployment);
        }
      });
    }
    return this.closing;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const echo = req.headers['x-request-echo'];
    if (echo !== undefined) {
      res.setHeader('x-request-echo', Array.isArray(echo) ? echo.join(', ') : echo);
    }
    const pathname = (req.url ?? '/').split('?')[0] ?? '/';
    const segments = pathname.split('/').filter((segment) => segment !== '');
    let name = '';
    try {
      name = decodeURIComponent(segments[0] ?? '');
    } catch {
      name = segments[0] ?? '';
    }
    const provider: Provider = segments[1] === 'anthropic' ? 'anthropic' : 'openai';
    const deployment = this.byName.get(name);
    if (deployment) res.setHeader('x-simulated-deployment', deployment.name);
    const exchange = new Exchange(deployment, provider, req, res, this.active);
    try {
      if (this.closing) return exchange.destroyConnection(false);
      if (!deployment) {
        await readBody(req);
        return exchange.sendError(404, `Unknown simulated deployment '${name}'`, {
          type: 'invalid_request_error',
          code: 'DeploymentNotFound',
        });
      }
      const route =
        segments[1] === 'openai' || segments[1] === 'anthropic'
          ? matchRoute(provider, segments.slice(2))
          : ({ kind: 'not-found' } as const);
      if (route.kind === 'not-found') {
        await readBody(req);
        return exchange.sendError(404, `Unknown path '${pathname}'`, { code: 'not_found' });
      }
      if (req.method !== 'POST') {
        await readBody(req);
        return exchange.sendError(405, `Method ${req.method ?? '?'} not allowed on '${pathname}'`);
      }
      await this.handleApi(exchange, deployment, route.api);
    } catch (error) {
      if (exchange.done) return;
      if (res.headersSent) return exchange.destroyConnection(false);
      const message = error instanceof Error ? error.message : String(error);
      exchange.sendError(500, `Simulated upstream failure: ${message}`);
    }
  }

  private async handleApi(
    exchange: Exchange,
    deployment: SimulatedDeployment,
    api: 'chat' | 'messages',
  ): Promise<void> {
    const state = internalsOf(deployment);
    const { req, res } = exchange;
    const sequence = ++state.sequence;
    res.setHeader(
      exchange.provider === 'anthropic' ? 'request-id' : 'x-request-id',
      `req_${deployment.name}_${sequence}`,
    );

    const raw = await readBody(req);
    if (!raw || exchange.done) return exchange.abort();
    let body: unknown = raw.text;
    let jsonOk = false;
    try {
      body = JSON.parse(raw.text) as unknown;
      jsonOk = true;
    } catch {
      // keep the raw text
    }
    const headers = headerRecord(req);
    deployment.requests.push({
      api,
      model: isRecord(body) && typeof body['model'] === 'string' ? body['model'] : '',
      stream: isRecord(body) && body['stream'] === true,
      headers,
      body,
      at: state.clock(),
    });
    if (deployment.requests.length > MAX_RECORDS) {
      deployment.requests.splice(0, deployment.requests.length - MAX_RECORDS);
    }
    notify(deployment);

    const fault = takeFault(state);
    if (fault?.kind === 'hang') {
      await untilAborted(exchange.signal);
      return exchange.abort();
    }
    if (!(await delay(deployment.latency, exchange.signal))) return exchange.abort();

    const read = (): PlanResult =>
      api === 'chat'
        ? readChatRequest(body, deployment.completionTokens)
        : readMessagesRequest(body, deployment.completionTokens);
    const created = Math.floor(state.clock() / 1000);
    const id =
      api === 'chat'
        ? `chatcmpl-${deployment.name}-${sequence}`
        : `msg_${deployment.name}_${sequence}`;

    if (fault) {
      return this.playFault(exchange, deployment, fault, read(), body, id, created);
    }
    if (raw.tooLarge) {
      return exchange.sendError(413, `Request body larger than ${MAX_BODY_BYTES} bytes`);
    }
    if (deployment.apiKey !== undefined && !isAuthorized(headers, deployment.apiKey)) {
      return exchange.sendError(
        401,
        exchange.provider === 'anthropic'
          ? 'invalid x-api-key'
          : 'Incorrect API key provided. You can find your API key in the simulated upstream.',
      );
    }
    if (!jsonOk) {
      return exchange.sendError(
        400,
        exchange.provider === 'anthropic'
          ? 'There was an error parsing the body of your request: invalid JSON'
          : 'We could not parse the JSON body of your request. (HINT: This likely means you ' +
              "aren't using your HTTP library correctly.)",
      );
    }
    const result = read();
    if (!result.ok) {
      return exchange.sendError(400, result.message, {
        param: result.param ?? null,
        code: result.code ?? null,
      });
    }
    const plan = result.plan;

    const admission = admit(deployment, state, plan);
    if (!admission.ok) {
      const seconds = Math.max(1, Math.ceil(admission.retryMs / 1000));
      return exchange.sendError(
        429,
        `Requests to simulated deployment '${deployment.name}' have exceeded its ` +
          `${admission.reason === 'tokens' ? 'token' : 'request'} rate limit. ` +
          `Please retry after ${seconds} second${seconds === 1 ? '' : 's'}.`,
        {
          type: admission.reason,
          headers: {
            ...admission.headers,
            'retry-after': seconds,
            'retry-after-ms': Math.max(1, Math.ceil(admission.retryMs)),
          },
        },
      );
    }

    if (!plan.stream) {
      const answer = api === 'chat' ? chatCompletionBody(plan, id, created) : messageBody(plan, id);
      return exchange.sendJson(200, answer, admission.headers, plan);
    }
    const frames =
      api === 'chat' ? chatCompletionFrames(plan, id, created) : messageFrames(plan, id);
    await this.stream(exchange, deployment, frames, admission.headers, plan);
  }

  private async stream(
    exchange: Exchange,
    deployment: SimulatedDeployment,
    frames: string[],
    headers: Record<string, string | number>,
    plan: CompletionPlan | undefined,
    fault?: { dropAfter?: number; malformed?: string },
  ): Promise<void> {
    if (exchange.done) return;
    exchange.res.writeHead(200, {
      ...headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    exchange.countStatus(200);
    exchange.res.flushHeaders();
    const last = frames.length - 1;
    const dropAfter =
      fault?.dropAfter === undefined ? undefined : Math.min(Math.floor(fault.dropAfter), last);
    const malformedAt = fault?.malformed === undefined ? undefined : Math.min(1, last);
    for (let i = 0; i < frames.length; i++) {
      if (i > 0 && !(await delay(deployment.chunkDelay, exchange.signal))) return exchange.abort();
      if (i === dropAfter) return exchange.destroyConnection(false);
      if (i === malformedAt && fault?.malformed !== undefined) {
        if (!(await exchange.write(fault.malformed))) return exchange.abort();
        exchange.res.end();
        return exchange.settle('failed');
      }
      if (!(await exchange.write(frames[i] as string))) return exchange.abort();
    }
    exchange.res.end();
    exchange.settle('ok', plan);
  }

  private async playFault(
    exchange: Exchange,
    deployment: SimulatedDeployment,
    fault: Exclude<SimulatedFault, { kind: 'hang' }>,
    result: PlanResult,
    body: unknown,
    id: string,
    created: number,
  ): Promise<void> {
    switch (fault.kind) {
      case 'status': {
        const headers: Record<string, string | number> = {};
        if (fault.retryAfter !== undefined) headers['retry-after'] = fault.retryAfter;
        if (fault.retryAfterMs !== undefined) headers['retry-after-ms'] = fault.retryAfterMs;
        return exchange.sendError(
          fault.status,
          fault.message ?? `Simulated ${fault.status} from deployment '${deployment.name}'`,
          { headers },
        );
      }
      case 'reset':
        return exchange.destroyConnection(true);
      case 'drop-mid-stream':
      case 'malformed': {
        const api = exchange.provider === 'anthropic' ? 'messages' : 'chat';
        const plan = result.ok ? result.plan : fallbackPlan(api, body);
        if (plan.stream) {
          const frames =
            api === 'chat' ? chatCompletionFrames(plan, id, created) : messageFrames(plan, id);
          return this.stream(exchange, deployment, frames, {}, undefined, {
            dropAfter: fault.kind === 'drop-mid-stream' ? (fault.afterEvents ?? 2) : undefined,
            malformed:
              fault.kind === 'malformed'
                ? api === 'chat'
                  ? malformedChatFrame(id)
                  : malformedMessageFrame()
                : undefined,
          });
        }
        const payload = Buffer.from(
          JSON.stringify(
            api === 'chat' ? chatCompletionBody(plan, id, created) : messageBody(plan, id),
          ),
        );
        const half = payload.subarray(0, Math.floor(payload.length / 2));
        if (exchange.done) return;
        exchange.res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': fault.kind === 'malformed' ? half.length : payload.length,
        });
        exchange.countStatus(200);
        if (fault.kind === 'malformed') {
          exchange.res.end(half);
          return exchange.settle('failed');
        }
        if (!(await exchange.write(half))) return exchange.abort();
        return exchange.destroyConnection(false);
      }
    }
  }
}

/** The answer plan for a fault when the request itself is not valid. */
function fallbackPlan(api: 'chat' | 'messages', body: unknown): CompletionPlan {
  return {
    api,
    model: isRecord(body) && typeof body['model'] === 'string' ? body['model'] : 'simulated',
    stream: isRecord(body) && body['stream'] === true,
    includeUsage: false,
    text: 'simulated answer',
    promptTokens: 1,
    completionTokens: 4,
    truncated: false,
    maxTokens: undefined,
  };
}

function takeFault(state: DeploymentInternals): SimulatedFault | undefined {
  const head = state.faults[0];
  if (!head) return undefined;
  head.remaining--;
  if (head.remaining <= 0) state.faults.shift();
  return head.fault;
}

type Admission =
  | { ok: true; headers: Record<string, string | number> }
  | {
      ok: false;
      reason: 'requests' | 'tokens';
      retryMs: number;
      headers: Record<string, string | number>;
    };

function admit(
  deployment: SimulatedDeployment,
  state: DeploymentInternals,
  plan: CompletionPlan,
): Admission {
  const now = state.clock();
  const requestLimit = deployment.rpm > 0 ? Math.max(1, Math.floor(deployment.rpm / 6)) : 0;
  const tokenLimit = deployment.tpm > 0 ? deployment.tpm : 0;
  const charge =
    plan.promptTokens +
    (deployment.chargeMaxTokens && plan.maxTokens !== undefined
      ? plan.maxTokens
      : plan.completionTokens);
  state.requestWindow.roll(now);
  state.tokenWindow.roll(now);
  const overRequests = requestLimit > 0 && state.requestWindow.used + 1 > requestLimit;
  const overTokens = tokenLimit > 0 && state.tokenWindow.used + charge > tokenLimit;
  const headers = (): Record<string, string | number> => ({
    ...(requestLimit > 0
      ? { 'x-ratelimit-remaining-requests': Math.max(0, requestLimit - state.requestWindow.used) }
      : {}),
    ...(tokenLimit > 0
      ? { 'x-ratelimit-remaining-tokens': Math.max(0, tokenLimit - state.tokenWindow.used) }
      : {}),
  });
  if (overRequests || overTokens) {
    return {
      ok: false,
      reason: overTokens ? 'tokens' : 'requests',
      retryMs: Math.max(
        overRequests ? state.requestWindow.remainingMs(now) : 0,
        overTokens ? state.tokenWindow.remainingMs(now) : 0,
      ),
      headers: headers(),
    };
  }
  state.requestWindow.used += 1;
  state.tokenWindow.used += charge;
  return { ok: true, headers: headers() };
}

/**
 * Starts a {@link SimulatedUpstream}; the same as `SimulatedUpstream.start(options)`. Each
 * deployment then offers ready-made SDK options via
 * {@link SimulatedDeployment.openaiClientOptions} and
 * {@link SimulatedDeployment.anthropicClientOptions}.
 *
 * @example
 * ```ts
 * const upstream = await startSimulatedUpstream({ deployments: [{ name: 'a' }] });
 * const openai = new OpenAI(upstream.deployment('a').openaiClientOptions());
 * ```
 */
export function startSimulatedUpstream(
  options: SimulatedUpstreamOptions,
): Promise<SimulatedUpstream> {
  return SimulatedUpstream.start(options);
}

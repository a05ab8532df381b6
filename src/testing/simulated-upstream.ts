/**
 * A fake LLM upstream for tests and demos: one `node:http` server that serves named simulated
 * deployments in the OpenAI (Chat Completions, Responses, Embeddings, Models) and Anthropic
 * (Messages, token counting) wire formats, with latency, quotas (Azure-like TPM / RPM) and
 * injectable faults. The wire formats live in `wire/`, quotas in `quota.ts`, faults in
 * `faults.ts`, paths in `routing.ts`; this module reads a request and puts them together.
 */
import { automaticPrefixes, explicitPrefix } from './prompt-cache';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

import {
  delay,
  Exchange,
  headerRecord,
  isAuthorized,
  MAX_BODY_BYTES,
  readBody,
  untilAborted,
  type Provider,
} from './exchange';
import { takeFault, type SimulatedFault } from './faults';
import { checkOptions, simulatedUpstreamSchema } from './options';
import type { Admission, DeploymentQuota, QuotaDemand, QuotaFamily } from './quota';
import { matchRoute, type Route } from './routing';
import {
  internalsOf,
  notifyWaiters,
  recordRequest,
  SimulatedDeployment,
  storeResponse,
  usePromptCache,
  type SimulatedDeploymentOptions,
  type SimulatedPoolLimits,
  type SimulatedRequestRecord,
} from './simulated-deployment';
import {
  chatCompletionBody,
  chatCompletionFrames,
  malformedChatFrame,
  readChatRequest,
} from './wire/chat-completions';
import { isRecord, type CompletionPlan, type PlanResult } from './wire/common';
import { filteredChatBody, filteredChatFrames, promptFilteredBody } from './wire/content-filter';
import { contextWindowError } from './wire/errors';
import { embeddingsBody, readEmbeddingsRequest } from './wire/embeddings';
import {
  malformedMessageFrame,
  messageBody,
  messageFrames,
  readCountTokensRequest,
  readMessagesRequest,
} from './wire/messages';
import { modelListBody, modelObject } from './wire/models';
import {
  deletedResponseBody,
  malformedResponseFrame,
  readResponsesRequest,
  responseBody,
  responseFrames,
  type ResponsesPlan,
} from './wire/responses';

/** Pending connections the server accepts (the kernel caps it at `net.core.somaxconn`). */
const LISTEN_BACKLOG = 8192;

type QuotaRoute = 'chat' | 'messages' | 'responses' | 'embeddings';

/** How one quota-charged API reads a request and renders its answer. */
interface CompletionWire {
  provider: Provider;
  read(body: unknown, deployment: SimulatedDeployment): PlanResult;
  /** A minimal valid body, for faults that must render an answer to an invalid request. */
  fallback(body: unknown): Record<string, unknown>;
  id(name: string, sequence: number): string;
  body(plan: CompletionPlan, id: string, created: number): unknown;
  frames(plan: CompletionPlan, id: string, created: number): string[];
  malformedFrame(id: string): string;
}

const modelOf = (body: unknown): string =>
  isRecord(body) && typeof body['model'] === 'string' && body['model'] !== ''
    ? body['model']
    : 'simulated';
const streamOf = (body: unknown): boolean => isRecord(body) && body['stream'] === true;
const responseIds = (id: string, created: number) => ({
  id,
  messageId: `msg_${id.slice('resp_'.length)}`,
  createdAt: created,
});

const WIRES: Record<QuotaRoute, CompletionWire> = {
  chat: {
    provider: 'openai',
    read: (body, d) => readChatRequest(body, d.completionTokens),
    fallback: (body) => ({
      model: modelOf(body),
      stream: streamOf(body),
      messages: [{ role: 'user', content: 'simulated answer' }],
    }),
    id: (name, sequence) => `chatcmpl-${name}-${sequence}`,
    body: chatCompletionBody,
    frames: chatCompletionFrames,
    malformedFrame: malformedChatFrame,
  },
  messages: {
    provider: 'anthropic',
    read: (body, d) => readMessagesRequest(body, d.completionTokens),
    fallback: (body) => ({
      model: modelOf(body),
      stream: streamOf(body),
      max_tokens: 16,
      messages: [{ role: 'user', content: 'simulated answer' }],
    }),
    id: (name, sequence) => `msg_${name}_${sequence}`,
    body: (plan, id) => messageBody(plan, id),
    frames: (plan, id) => messageFrames(plan, id),
    malformedFrame: () => malformedMessageFrame(),
  },
  responses: {
    provider: 'openai',
    read: (body, d) =>
      readResponsesRequest(body, (id) => internalsOf(d).responses.get(id), d.completionTokens),
    fallback: (body) => ({
      model: modelOf(body),
      stream: streamOf(body),
      input: 'simulated answer',
    }),
    id: (name, sequence) => `resp_${name}_${sequence}`,
    body: (plan, id, created) => responseBody(plan as ResponsesPlan, responseIds(id, created)),
    frames: (plan, id, created) => responseFrames(plan as ResponsesPlan, responseIds(id, created)),
    malformedFrame: () => malformedResponseFrame(),
  },
  embeddings: {
    provider: 'openai',
    read: (body) => readEmbeddingsRequest(body),
    fallback: (body) => ({ model: modelOf(body), input: 'simulated answer' }),
    id: (name, sequence) => `emb-${name}-${sequence}`,
    body: (plan) => embeddingsBody(plan as Parameters<typeof embeddingsBody>[0]),
    frames: () => [],
    malformedFrame: () => '',
  },
};

const RECORD_API: Record<Route['kind'], SimulatedRequestRecord['api']> = {
  chat: 'chat',
  messages: 'messages',
  responses: 'responses',
  embeddings: 'embeddings',
  count_tokens: 'count_tokens',
  models: 'models',
  model: 'models',
  'retrieve-response': 'response',
  'delete-response': 'response',
};

const LIMIT_NAMES = {
  requests: 'request',
  tokens: 'token',
  input_tokens: 'input token',
  output_tokens: 'output token',
} as const;

/** The message of a quota 429, naming the limit, and the sizes when the request can never fit. */
function rateLimitMessage(
  deployment: SimulatedDeployment,
  family: QuotaFamily,
  demand: QuotaDemand,
  admission: Extract<Admission, { ok: false }>,
): string {
  const seconds = Math.max(1, Math.ceil(admission.retryMs / 1000));
  const retry = `Please retry after ${seconds} second${seconds === 1 ? '' : 's'}.`;
  const what = LIMIT_NAMES[admission.reason];
  if (admission.never) {
    const [size, limit] =
      admission.reason === 'input_tokens'
        ? [demand.inputTokens, deployment.itpm]
        : admission.reason === 'output_tokens'
          ? [demand.outputTokens, deployment.otpm]
          : [
              family === 'anthropic' ? demand.inputTokens + demand.outputTokens : demand.tokens,
              deployment.tpm,
            ];
    return (
      `This request's ${size} ${what}s exceed the ${what} rate limit of simulated deployment ` +
      `'${deployment.name}' (${limit} per minute) and can never fit.`
    );
  }
  if (family === 'anthropic' && deployment.quota === 'faithful') {
    return (
      `This request would exceed the ${what} rate limit of simulated deployment ` +
      `'${deployment.name}' per minute. ${retry}`
    );
  }
  if (family === 'openai' && deployment.quota === 'faithful' && deployment.rules === 'azure') {
    // Azure's words: "call rate limit" for requests, "token rate limit" for tokens.
    const limit = admission.reason === 'requests' ? 'call' : 'token';
    return (
      `Requests to simulated deployment '${deployment.name}' have exceeded ${limit} rate limit ` +
      `of its current pricing tier. ${retry}`
    );
  }
  return (
    `Requests to simulated deployment '${deployment.name}' have exceeded its ${what} rate ` +
    `limit. ${retry}`
  );
}

const isQuotaRoute = (route: Route): route is { kind: QuotaRoute } => route.kind in WIRES;

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
  /**
   * Limits of the levels of the deployments' quota pool paths, as OpenAI sets an organization's
   * limits above its projects' (`{ org: { tpm: 100_000 } }` over deployments in `org/p1` and
   * `org/p2`): a request goes only where its own quota and every level of its path admit it, and
   * is charged at each; answers' headers speak of the deployment's own quota. A level follows the
   * rules of the first deployment under it (OpenAI's and Azure standard's can hold levels).
   */
  quotaPools?: Record<string, SimulatedPoolLimits>;
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
    const pools = new Map<string, DeploymentQuota>();
    this.deployments = options.deployments.map(
      (deployment) =>
        new SimulatedDeployment(deployment, this.url, clock, pools, options.quotaPools),
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
    options = checkOptions(simulatedUpstreamSchema, options, 'simulated upstream options');
    const host = options.host ?? '127.0.0.1';
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
          notifyWaiters(deployment);
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
      // `/<name>/v1/...` is OpenAI's own API shape, served as the OpenAI routes.
      const path = segments[1] === 'v1' ? ['openai', ...segments.slice(1)] : segments.slice(1);
      const match = matchRoute(req.method ?? 'GET', path);
      if (!match.ok) {
        await readBody(req);
        if (match.status === 404) {
          return exchange.sendError(404, `Unknown path '${pathname}'`, { code: 'not_found' });
        }
        return exchange.sendError(405, `Method ${req.method ?? '?'} not allowed on '${pathname}'`, {
          headers: { allow: match.allowed },
        });
      }
      await this.handleApi(exchange, deployment, match.route);
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
    route: Route,
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
    recordRequest(deployment, {
      api: RECORD_API[route.kind],
      model:
        route.kind === 'model'
          ? route.id
          : isRecord(body) && typeof body['model'] === 'string'
            ? body['model']
            : '',
      stream: isRecord(body) && body['stream'] === true,
      headers,
      body: req.method === 'POST' ? body : undefined,
      at: state.clock(),
    });
    notifyWaiters(deployment);

    const fault = takeFault(state.faults);
    if (fault?.kind === 'hang') {
      await untilAborted(exchange.signal);
      return exchange.abort();
    }
    if (!(await delay(deployment.latency, exchange.signal))) return exchange.abort();
    const created = Math.floor(state.clock() / 1000);
    // Every answer reports the quota, errors and faults included, as the services do.
    for (const [name, value] of Object.entries(
      state.quota.headers(exchange.provider, state.clock()),
    )) {
      res.setHeader(name, value);
    }

    if (deployment.spillover && exchange.provider === 'openai' && isRecord(body)) {
      const model = body['model'];
      if (typeof model === 'string' && /^[\w.~-]+$/.test(model)) {
        res.setHeader(`x-ms-spillover-from-${model.toLowerCase()}`, 'true');
      }
    }
    if (fault) return this.playFault(exchange, deployment, fault, route, body, sequence, created);
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
    if (req.method === 'POST' && !jsonOk) {
      return exchange.sendError(
        400,
        exchange.provider === 'anthropic'
          ? 'There was an error parsing the body of your request: invalid JSON'
          : 'We could not parse the JSON body of your request. (HINT: This likely means you ' +
              "aren't using your HTTP library correctly.)",
      );
    }
    const named = deployment.deploymentNames;
    if (named !== undefined && (isQuotaRoute(route) || route.kind === 'count_tokens')) {
      const model = isRecord(body) && typeof body['model'] === 'string' ? body['model'] : '';
      if (!named.includes(model)) {
        return exchange.sendError(
          404,
          `The API deployment '${model}' does not exist on '${deployment.name}' (its deployments: ${named.join(', ')}).`,
          { azureCode: 'DeploymentNotFound' },
        );
      }
    }
    if (!isQuotaRoute(route)) return this.answerPlain(exchange, deployment, route, body, created);

    const wire = WIRES[route.kind];
    const result = wire.read(body, deployment);
    if (!result.ok) {
      return exchange.sendError(result.status ?? 400, result.message, {
        param: result.param ?? null,
        code: result.code ?? null,
      });
    }
    const plan = result.plan;
    const window = deployment.contextWindow;
    const completion = plan.maxTokens ?? 0;
    if (window > 0 && plan.promptTokens + completion > window) {
      const tooLong = contextWindowError(exchange.provider, window, plan.promptTokens, completion);
      return exchange.sendError(400, tooLong.message, {
        param: tooLong.param ?? null,
        code: tooLong.code ?? null,
      });
    }
    // Prefixes this request caches once admitted, each used now.
    let cacheKeys: readonly string[] = [];
    if (plan.cachePrefix) {
      const { key, tokens } = plan.cachePrefix;
      const use = explicitPrefix(state.promptCache, key, tokens, state.clock());
      plan.cacheReadTokens = use === 'read' ? tokens : 0;
      plan.cacheCreationTokens = use === 'write' ? tokens : 0;
      if (use !== undefined) cacheKeys = [key];
    } else if (plan.prompt !== undefined && exchange.provider === 'openai') {
      const auto = automaticPrefixes(state.promptCache, plan.model, plan.prompt, state.clock());
      plan.cacheReadTokens = auto.cachedTokens;
      cacheKeys = auto.keys;
    }

    const family: QuotaFamily = exchange.provider;
    const demand = state.quota.demand(family, plan);
    const admission = state.quota.admit(family, demand, state.clock());
    if (!admission.ok) {
      return exchange.sendError(429, rateLimitMessage(deployment, family, demand, admission), {
        type: admission.reason,
        headers: {
          ...admission.headers,
          ...state.quota.retryHeaders(family, admission.retryMs),
        },
      });
    }
    const charge = admission.charge;
    exchange.onSettle = () =>
      state.quota.settle(charge, plan.completionTokens, internalsOf(deployment).clock());
    for (const key of cacheKeys) usePromptCache(deployment, key, state.clock());
    // Admitted and counted: a held answer waits, as a model still generating would.
    const held = state.held;
    if (held !== undefined) {
      const released = await new Promise<boolean>((resolve) => {
        held.push(() => resolve(true));
        notifyWaiters(deployment);
        exchange.signal.addEventListener('abort', () => resolve(false), { once: true });
      });
      if (!released || exchange.done) return exchange.abort();
    }

    const id = wire.id(deployment.name, sequence);
    if (plan.api === 'responses') {
      const responsesPlan = plan as ResponsesPlan;
      if (responsesPlan.store) {
        storeResponse(deployment, id, {
          body: responseBody(responsesPlan, responseIds(id, created)),
          contextTokens: plan.promptTokens + plan.completionTokens,
        });
      }
    }
    if (!plan.stream) {
      return exchange.sendJson(200, wire.body(plan, id, created), admission.headers, plan);
    }
    await this.stream(
      exchange,
      deployment,
      wire.frames(plan, id, created),
      admission.headers,
      plan,
    );
  }

  /** Answers the routes that no quota counts: models, stored responses, token counting. */
  private answerPlain(
    exchange: Exchange,
    deployment: SimulatedDeployment,
    route: Exclude<Route, { kind: QuotaRoute }>,
    body: unknown,
    created: number,
  ): void {
    const answer = plainAnswer(deployment, route, body, created);
    if (!answer.ok) {
      return exchange.sendError(answer.status, answer.message, {
        param: answer.param ?? null,
        code: answer.code ?? null,
      });
    }
    if (route.kind === 'delete-response') internalsOf(deployment).responses.delete(route.id);
    exchange.sendJson(200, answer.body);
  }

  private async stream(
    exchange: Exchange,
    deployment: SimulatedDeployment,
    frames: string[],
    headers: Record<string, string | number>,
    plan: CompletionPlan | undefined,
    fault?: { dropAfter?: number; malformed?: string; stallAfter?: number; stallMs?: number },
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
    const stallAt =
      fault?.stallAfter === undefined ? undefined : Math.min(Math.floor(fault.stallAfter), last);
    for (let i = 0; i < frames.length; i++) {
      if (i === stallAt && !(await stall(fault?.stallMs, exchange.signal))) {
        return exchange.abort();
      }
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
    route: Route,
    body: unknown,
    sequence: number,
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
          { headers, azureCode: fault.code },
        );
      }
      case 'reset':
        return exchange.destroyConnection(true);
      case 'content-filter':
        return this.filter(exchange, deployment, fault, route, body, sequence, created);
      case 'stall':
      case 'drop-mid-stream':
      case 'malformed': {
        let json: unknown;
        if (isQuotaRoute(route)) {
          const wire = WIRES[route.kind];
          const id = wire.id(deployment.name, sequence);
          const read = wire.read(body, deployment);
          const fallback = read.ok ? read : wire.read(wire.fallback(body), deployment);
          if (!fallback.ok) throw new Error(`fallback answer invalid: ${fallback.message}`);
          const plan = fallback.plan;
          if (plan.stream) {
            const frames = wire.frames(plan, id, created);
            if (fault.kind === 'stall') {
              return this.stream(exchange, deployment, frames, {}, plan, {
                stallAfter: fault.afterEvents ?? 0,
                stallMs: fault.ms,
              });
            }
            return this.stream(exchange, deployment, frames, {}, undefined, {
              dropAfter: fault.kind === 'drop-mid-stream' ? (fault.afterEvents ?? 2) : undefined,
              malformed: fault.kind === 'malformed' ? wire.malformedFrame(id) : undefined,
            });
          }
          json = wire.body(plan, id, created);
        } else {
          const answer = plainAnswer(deployment, route, body, created);
          json = answer.ok ? answer.body : {};
        }
        const payload = Buffer.from(JSON.stringify(json));
        if (fault.kind === 'stall') {
          if (exchange.done) return;
          exchange.res.writeHead(200, {
            'content-type': 'application/json',
            'content-length': payload.length,
          });
          exchange.countStatus(200);
          exchange.res.flushHeaders();
          if (!(await stall(fault.ms, exchange.signal))) return exchange.abort();
          exchange.res.end(payload);
          return exchange.settle('ok');
        }
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

  /** Azure's content filter refuses: the prompt (a 400) or the output (withheld from a 200). */
  private async filter(
    exchange: Exchange,
    deployment: SimulatedDeployment,
    fault: Extract<SimulatedFault, { kind: 'content-filter' }>,
    route: Route,
    body: unknown,
    sequence: number,
    created: number,
  ): Promise<void> {
    const category = fault.category ?? 'hate';
    if (exchange.provider === 'anthropic') {
      return exchange.sendError(400, 'Output blocked by content filtering policy');
    }
    if (fault.on !== 'completion' || route.kind !== 'chat') {
      return exchange.sendJson(400, promptFilteredBody(category));
    }
    const read = WIRES.chat.read(body, deployment);
    const plan = read.ok ? read.plan : undefined;
    if (plan === undefined) return exchange.sendJson(400, promptFilteredBody(category));
    const id = WIRES.chat.id(deployment.name, sequence);
    if (!plan.stream) {
      return exchange.sendJson(200, filteredChatBody(plan, id, created, category), {}, plan);
    }
    return this.stream(exchange, deployment, filteredChatFrames(plan, id, created), {}, plan);
  }
}

/** Waits `ms`, or until the client closes when `ms` is undefined; false once it closed. */
async function stall(ms: number | undefined, signal: AbortSignal): Promise<boolean> {
  if (ms !== undefined) return delay(ms, signal);
  await untilAborted(signal);
  return false;
}

type PlainAnswer =
  | { ok: true; body: unknown }
  | { ok: false; status: number; message: string; param?: string; code?: string };

/** The answer of a route no quota counts, or its error. */
function plainAnswer(
  deployment: SimulatedDeployment,
  route: Exclude<Route, { kind: QuotaRoute }>,
  body: unknown,
  created: number,
): PlainAnswer {
  switch (route.kind) {
    case 'models':
      return { ok: true, body: modelListBody(deployment.models, created) };
    case 'model':
      return deployment.models.includes(route.id)
        ? { ok: true, body: modelObject(route.id, created) }
        : {
            ok: false,
            status: 404,
            message: `The model '${route.id}' does not exist`,
            param: 'model',
            code: 'model_not_found',
          };
    case 'retrieve-response':
    case 'delete-response': {
      const stored = internalsOf(deployment).responses.get(route.id);
      if (!stored) {
        return {
          ok: false,
          status: 404,
          message: `Response with id '${route.id}' not found.`,
          code: 'not_found',
        };
      }
      return {
        ok: true,
        body: route.kind === 'retrieve-response' ? stored.body : deletedResponseBody(route.id),
      };
    }
    case 'count_tokens': {
      const counted = readCountTokensRequest(body);
      if (!counted.ok) {
        return { ok: false, status: counted.status ?? 400, message: counted.message };
      }
      return { ok: true, body: { input_tokens: counted.inputTokens } };
    }
  }
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

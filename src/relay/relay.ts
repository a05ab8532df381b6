import type { ApiAdapter, ApiOperation } from '../providers/adapter';
import type { Answer } from '../registry/deployment';
import type { DeploymentRegistry } from '../registry/deployment-registry';
import { SwitchboardError } from '../switchboard.error';
import { headerTags } from '../placement/tags';
import { hasSwitchboardFields } from '../routing/call-params';
import type { Provider } from '../types';
import { clip } from '../errors/clip';
import { REDACTED } from '../errors/scrub';
import { errorBody, upstreamErrorBody, type Problem } from './error-body';
import {
  readRequestBody,
  REQUEST_BODY,
  type RelayRequestInit,
  type RequestBody,
} from './request-body';
import { httpErrorFor } from './http-error';
import { RELAY_APIS, RESPONSES, RETRIEVE_RESPONSE, routeOf, type RelayApi } from './relay-apis';
import { RELAY_BODY, rawAnswer, type RelayBody, type RelayOptions } from './relay-operations';
import { bodyText, headerOf, requestParts, type RequestParts } from './request-parts';
import { bytesOf, responseOfStream } from './sse-events';
import { cacheOffByHeaders } from '../cache/cache-headers';
import { cachedReply } from '../cache/cached-answer';

/**
 * A `fetch` that answers OpenAI- and Anthropic-wire requests through a switchboard.
 *
 * @example
 * ```ts
 * const openai = new OpenAI({ apiKey: 'unused', fetch: sb.fetch });
 * ```
 */
export type SwitchboardFetch = (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;

/**
 * What the relay needs of its switchboard: its deployments, and its calls (admission, sessions,
 * fallbacks, failover, accounting and telemetry), exactly as the facade's methods make them.
 */
interface RelayPort {
  readonly registry: DeploymentRegistry;
  /** The deployments' own keys: never in an answer, even where an upstream quoted one. */
  readonly secrets?: readonly string[];
  /** Where a request refused for what no client should send is logged, one line each. */
  warn?(line: string): void;
  /** A balanced call, as `sb.chat.completions.create(params, options)` makes it. */
  call(
    adapter: ApiAdapter,
    op: ApiOperation,
    params: Record<string, unknown>,
    options: RelayOptions,
  ): Promise<Answer>;
  /** A call to the deployment holding `id`, as `sb.responses.retrieve(id)` makes it. */
  callHolding(
    adapter: ApiAdapter,
    op: ApiOperation,
    id: string,
    body: Record<string, unknown>,
    options: RelayOptions,
  ): Promise<Answer>;
}

/** Headers that describe how the upstream's body was sent, not the body the relay answers. */
const BODY_HEADERS = [
  'content-length',
  'content-encoding',
  'transfer-encoding',
  'connection',
  'keep-alive',
];
const JSON_TYPE = 'application/json';
/** Client headers the upstream gets (beta features); nothing else the client sent goes there. */
const FORWARDED = ['anthropic-beta'] as const;

const encoder = new TextEncoder();

/**
 * Builds a switchboard's `fetch`: the path names the API (`…/chat/completions`,
 * `…/responses[/:id]`, `…/embeddings`, `…/messages[/count_tokens]`, `…/models[/:id]`), the host
 * and the client's key are ignored, `x-session-id` is the call's `session_id`,
 * `x-switchboard-lane` its `lane`, `x-switchboard-tenant` its `tenant` and `x-switchboard-tags`
 * (`eu,gdpr`) its `tags` (none of them sent
 * upstream, nor any other header of the client's but `anthropic-beta`); the answer is the
 * upstream's own status, headers and body (SSE passed on event by event), or an error in the
 * API's own shape.
 *
 * @example
 * ```ts
 * const relayFetch = createRelay({ registry, call, callHolding });
 * const res = await relayFetch('http://switchboard/v1/chat/completions', { method: 'POST', body });
 * ```
 */
export function createRelay(port: RelayPort): SwitchboardFetch {
  const created = Math.floor(Date.now() / 1000);
  const { registry } = port;

  async function relay(parts: RequestParts, given: RequestBody | undefined): Promise<Response> {
    const route = routeOf(parts.path);
    const provider: Provider = parts.path.includes('/messages') ? 'anthropic' : 'openai';
    if (route === undefined) return notFound(provider, parts);
    if (route.kind === 'models') {
      if (parts.method !== 'GET') return notFound(provider, parts);
      return models(route.id, headerOf(parts.headers, 'anthropic-version') !== undefined);
    }
    if (route.kind === 'retrieve') {
      if (parts.method !== 'GET') return notFound(provider, parts);
      return retrieve(route.id, parts);
    }
    if (parts.method !== 'POST') return notFound(provider, parts);
    return create(route.api, parts, given);
  }

  async function create(
    api: RelayApi,
    parts: RequestParts,
    given: RequestBody | undefined,
  ): Promise<Response> {
    let read = given;
    if (read === undefined) {
      const body = await bodyText(parts);
      read = readRequestBody(body?.raw, body?.text);
    }
    if (read.problem !== undefined) {
      if (read.refused !== undefined) port.warn?.(`sb.fetch ${read.refused}`);
      return problem(api.provider, read.problem);
    }
    const params = read.params;
    const invalid = api.check(params) ?? checkModel(api, params.model as string);
    if (invalid) return problem(api.provider, invalid);

    // A body carrying the switchboard's own fields goes upstream re-serialized, without them.
    const own = hasSwitchboardFields(params);
    const sessionId = headerOf(parts.headers, 'x-session-id');
    if (sessionId !== undefined && sessionId !== '') params.session_id = sessionId;
    const lane = headerOf(parts.headers, 'x-switchboard-lane');
    if (lane !== undefined && lane !== '') params.lane = lane;
    const tenant = headerOf(parts.headers, 'x-switchboard-tenant');
    if (tenant !== undefined && tenant !== '') params.tenant = tenant;
    const tags = headerTags(headerOf(parts.headers, 'x-switchboard-tags'));
    if (tags !== undefined) params.tags = tags;
    if (cacheOffByHeaders((name) => headerOf(parts.headers, name))) params.cache = false;
    const relayBody: RelayBody = {
      raw: own ? undefined : read.raw,
      parsed: params,
      headers: upstreamHeaders(parts.headers),
    };
    const options: RelayOptions = { signal: parts.signal ?? undefined, [RELAY_BODY]: relayBody };
    let answer: Answer;
    try {
      answer = await port.call(api.adapter, api.op, params, options);
    } catch (error) {
      return failed(api, error, parts.signal);
    }
    // Served from the response cache: the recorded JSON, or the recorded SSE bytes as they came.
    const reply = cachedReply(answer);
    if (reply !== undefined) return reply;
    if (params.stream === true && api.op.streams?.(params) === true) {
      return streamed(api, answer.data);
    }
    return answered(answer.data);
  }

  async function retrieve(id: string, parts: RequestParts): Promise<Response> {
    const options: RelayOptions = { signal: parts.signal ?? undefined };
    try {
      const answer = await port.callHolding(
        RESPONSES.adapter,
        RETRIEVE_RESPONSE,
        id,
        { id },
        options,
      );
      return answered(answer.data);
    } catch (error) {
      // An id no deployment is known to hold is, to the client, a missing response: no
      // deployment was asked.
      if (error instanceof SwitchboardError && error.code === 'invalid_request') {
        return problem('openai', { status: 404, message: error.message, param: 'response_id' });
      }
      return failed(RESPONSES, error, parts.signal);
    }
  }

  /** Unknown models and models of the other API are the client's mistake: said at once. */
  function checkModel(api: RelayApi, model: string): Problem | undefined {
    const provider = registry.models.get(model);
    if (provider === undefined) {
      const known = [...registry.models.keys()].join(', ');
      return {
        status: 404,
        message: `The model '${clip(model)}' does not exist on this switchboard (models: ${known}).`,
        param: 'model',
        code: 'model_not_found',
      };
    }
    if (provider === api.provider) return undefined;
    const paths = RELAY_APIS.filter((a) => a.provider === provider)
      .map((a) => a.path)
      .join(', ');
    return {
      status: 400,
      message: `The model '${model}' is served through ${paths} on this switchboard.`,
      param: 'model',
      code: 'model_not_supported',
    };
  }

  function models(id: string | undefined, anthropic: boolean): Response {
    const entry = (model: string, provider: Provider) =>
      anthropic
        ? {
            type: 'model',
            id: model,
            display_name: model,
            created_at: new Date(created * 1000).toISOString(),
          }
        : { id: model, object: 'model', created, owned_by: provider };
    if (id === undefined) {
      const data = [...registry.models].map(([model, provider]) => entry(model, provider));
      return json(
        200,
        anthropic
          ? {
              data,
              has_more: false,
              first_id: data[0]?.id ?? null,
              last_id: data.at(-1)?.id ?? null,
            }
          : { object: 'list', data },
      );
    }
    const provider = registry.models.get(id);
    if (provider === undefined) {
      return problem(anthropic ? 'anthropic' : 'openai', {
        status: 404,
        message: `The model '${clip(id)}' does not exist on this switchboard.`,
        param: 'model',
        code: 'model_not_found',
      });
    }
    return json(200, entry(id, provider));
  }

  function failed(api: RelayApi, error: unknown, signal: AbortSignal | null | undefined): Response {
    // The client gave up: `fetch` rejects, as it would.
    if (signal?.aborted) throw signal.reason ?? error;
    const http = httpErrorFor(error);
    const upstream = http.fromUpstream
      ? upstreamErrorBody(api.provider, error as { error?: unknown })
      : undefined;
    const problem = { status: http.status, message: http.message };
    const body = upstream ?? errorBody(api.provider, problem);
    // The switchboard's own refusal says why each deployment was passed over (names, reasons and
    // times only); both APIs' bodies keep the details in their `error` member.
    const explanations = (error as { explanations?: unknown } | null)?.explanations;
    if (upstream === undefined && Array.isArray(explanations) && explanations.length > 0) {
      (body as { error: Record<string, unknown> }).error.explanations = explanations;
    }
    return json(http.status, body, http.headers, port.secrets);
  }

  function streamed(api: RelayApi, data: unknown): Response {
    const events = data as AsyncIterable<unknown> & { controller?: AbortController };
    const upstream = responseOfStream(events.controller);
    const iterator = events[Symbol.asyncIterator]();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = await iterator.next();
          if (next.done) controller.close();
          else controller.enqueue(bytesOf(next.value) ?? encoder.encode(frameOf(next.value)));
        } catch (error) {
          const http = httpErrorFor(error);
          const problem = { status: http.status, message: http.message };
          controller.enqueue(encoder.encode(withoutSecrets(api.errorFrame(problem), port.secrets)));
          controller.close();
        }
      },
      async cancel() {
        await iterator.return?.();
      },
    });
    const headers = new Headers(upstream?.headers);
    for (const name of BODY_HEADERS) headers.delete(name);
    return new Response(body, { status: upstream?.status ?? 200, headers });
  }

  return function fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
    try {
      const parts = requestParts(input, init);
      if (parts.signal?.aborted) return Promise.reject(parts.signal.reason);
      return relay(parts, (init as RelayRequestInit | undefined)?.[REQUEST_BODY]);
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

/**
 * An event made here rather than read from an upstream (a translated stream): Chat Completions
 * chunks (which have no `type`) are `data:` lines; the typed events of Messages and Responses
 * carry their `event:` line too, as those APIs send them (Anthropic's SDK reads it).
 */
function frameOf(event: unknown): string {
  const type = (event as { type?: unknown } | null)?.type;
  const data = `data: ${JSON.stringify(event)}\n\n`;
  return typeof type === 'string' ? `event: ${type}\n${data}` : data;
}

/** A JSON answer as the upstream sent it: its status, headers and text. */
function answered(data: unknown): Response {
  const raw = rawAnswer(data);
  if (raw === undefined) return json(200, data as object);
  const res = new Response(raw.text, {
    status: raw.response.status,
    headers: raw.response.headers,
  });
  for (const name of BODY_HEADERS) res.headers.delete(name);
  return res;
}

function problem(provider: Provider, p: Problem): Response {
  return json(p.status, errorBody(provider, p));
}

function notFound(provider: Provider, parts: RequestParts): Response {
  return problem(provider, {
    status: 404,
    message: `No API at ${parts.method} ${clip(parts.path)}: the switchboard serves …/chat/completions, …/responses, …/embeddings, …/messages, …/messages/count_tokens and …/models.`,
  });
}

function json(
  status: number,
  body: object,
  headers?: Record<string, string>,
  secrets?: readonly string[],
): Response {
  return new Response(withoutSecrets(JSON.stringify(body), secrets), {
    status,
    headers:
      headers === undefined
        ? { 'content-type': JSON_TYPE }
        : { ...headers, 'content-type': JSON_TYPE },
  });
}

/** What of the client's headers the upstream gets: the content type, and beta features. */
function upstreamHeaders(headers: HeadersInit | undefined): Record<string, string> {
  let out: Record<string, string> | undefined;
  for (const name of FORWARDED) {
    const value = headerOf(headers, name);
    if (value !== undefined) (out ??= { 'content-type': JSON_TYPE })[name] = value;
  }
  return out ?? UPSTREAM_JSON;
}

const UPSTREAM_JSON: Record<string, string> = Object.freeze({
  'content-type': JSON_TYPE,
}) as Record<string, string>;

const MIN_SECRET_LENGTH = 8;

/** `text` with every one of `secrets` (as written, and as JSON escapes it) replaced. */
function withoutSecrets(text: string, secrets: readonly string[] | undefined): string {
  if (secrets === undefined) return text;
  let out = text;
  for (const secret of secrets) {
    // A short one would blank ordinary words out of every message; none is a real key.
    if (secret.length < MIN_SECRET_LENGTH) continue;
    for (const form of [secret, JSON.stringify(secret).slice(1, -1)]) {
      if (out.includes(form)) out = out.split(form).join(REDACTED);
    }
  }
  return out;
}

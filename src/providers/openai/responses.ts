import type { OpenAI } from 'openai';
import type { APIPromise } from 'openai/core/api-promise';
import type { Stream } from 'openai/core/streaming';
import { ResponseStream, type ResponseStreamParams } from 'openai/lib/responses/ResponseStream';
import type {
  ExtractParsedContentFromParams,
  ResponseCreateParamsWithTools,
} from 'openai/lib/ResponsesParser';
import type {
  ParsedResponse,
  Response,
  ResponseCreateParamsBase,
  ResponseCreateParamsNonStreaming,
  ResponseCreateParamsStreaming,
  ResponseRetrieveParamsBase,
  ResponseRetrieveParamsNonStreaming,
  ResponseRetrieveParamsStreaming,
  ResponseStreamEvent,
} from 'openai/resources/responses/responses';
import type { TokenUsage as Usage } from '../../quota/admission';
import type { SessionParams } from '../../types';
import { defineAdapter, type Surface } from '../adapter';
import { SurfaceFacade } from '../surface-facade';
import { admissionRecord } from '../admission-record';
import { contentLength, inputLength, tokenField } from '../text-length';
import type { OpenAIRequestOptions } from './openai-deployment';

/**
 * `sb.responses`: the `openai` client's `responses`, balanced. A call with
 * `previous_response_id` (and `retrieve(id)`) goes to the deployment that created that response.
 */
export interface SwitchboardResponses {
  create(
    body: ResponseCreateParamsNonStreaming & SessionParams,
    options?: OpenAIRequestOptions,
  ): APIPromise<Response>;
  create(
    body: ResponseCreateParamsStreaming & SessionParams,
    options?: OpenAIRequestOptions,
  ): APIPromise<Stream<ResponseStreamEvent>>;
  create(
    body: ResponseCreateParamsBase & SessionParams,
    options?: OpenAIRequestOptions,
  ): APIPromise<Stream<ResponseStreamEvent> | Response>;
  parse<
    Params extends ResponseCreateParamsWithTools,
    ParsedT = ExtractParsedContentFromParams<Params>,
  >(
    body: Params & SessionParams,
    options?: OpenAIRequestOptions,
  ): APIPromise<ParsedResponse<ParsedT>>;
  /** The SDK's `ResponseStream` over a balanced streaming call. */
  stream<Params extends ResponseStreamParams, ParsedT = ExtractParsedContentFromParams<Params>>(
    body: Params & SessionParams,
    options?: OpenAIRequestOptions,
  ): ResponseStream<ParsedT>;
  /** A stored response, from the deployment that created it. */
  retrieve(
    responseID: string,
    query?: ResponseRetrieveParamsNonStreaming,
    options?: OpenAIRequestOptions,
  ): APIPromise<Response>;
  retrieve(
    responseID: string,
    query: ResponseRetrieveParamsStreaming,
    options?: OpenAIRequestOptions,
  ): APIPromise<Stream<ResponseStreamEvent>>;
  retrieve(
    responseID: string,
    query?: ResponseRetrieveParamsBase,
    options?: OpenAIRequestOptions,
  ): APIPromise<Stream<ResponseStreamEvent> | Response>;
}

interface ResponseUsage {
  input_tokens?: number;
  output_tokens?: number;
  input_tokens_details?: { cached_tokens?: number } | null;
}

function usageOf(response: { usage?: ResponseUsage | null } | undefined): Usage | undefined {
  const usage = response?.usage;
  if (!usage) return undefined;
  const cached = usage.input_tokens_details?.cached_tokens;
  const input = usage.input_tokens ?? 0;
  const output = usage.output_tokens ?? 0;
  return cached ? { input, output, cacheRead: cached } : { input, output };
}

/** Stream events that end a response and carry its usage. */
const FINAL_EVENTS = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/**
 * The Responses API (`POST /responses`, `GET /responses/{id}`) on OpenAI and Azure OpenAI
 * deployments. A stored response lives on the deployment that created it: chained calls are
 * pinned there.
 *
 * @example
 * ```ts
 * const first = await sb.responses.create({ model: 'gpt-4o-mini', input: 'Hi' });
 * await sb.responses.create({ model: 'gpt-4o-mini', input: 'More', previous_response_id: first.id });
 * ```
 */
export const responses = defineAdapter<SwitchboardResponses, OpenAI>()({
  name: 'responses',
  path: ['responses'],
  provider: 'openai',
  operations: {
    create: {
      send: (client, body, options) => client.responses.create(body as never, options as never),
    },
    parse: {
      send: (client, body, options) => client.responses.parse(body as never, options as never),
    },
    retrieve: {
      metered: false,
      streams: (body) => (body.query as { stream?: unknown } | undefined)?.stream === true,
      send: (client, body, options) =>
        client.responses.retrieve(
          body.response_id as string,
          body.query as never,
          options as never,
        ),
    },
  },
  admission(body, defaultOutput) {
    const input = Math.ceil((contentLength(body.instructions) + inputLength(body.input)) / 4);
    const output = tokenField(body.max_output_tokens) || defaultOutput;
    // No cap: charged the deployment's own reservation (`outputReservation`).
    return admissionRecord(input, output, output > 0 ? undefined : 1);
  },
  usage: (data) => usageOf(data as { usage?: ResponseUsage }),
  streamUsage(event) {
    const e = event as { type?: string; response?: { usage?: ResponseUsage } };
    return e.type !== undefined && FINAL_EVENTS.has(e.type) ? usageOf(e.response) : undefined;
  },
  chain: {
    refersTo(body) {
      const id = body.previous_response_id;
      return typeof id === 'string' && id !== '' ? id : undefined;
    },
    created(value, body) {
      if (body.store === false) return undefined;
      const v = value as {
        object?: string;
        id?: string;
        type?: string;
        response?: { id?: string };
      };
      if (v.object === 'response') return v.id;
      if (v.type === 'response.created') return v.response?.id;
      return undefined;
    },
  },
  facade: (surface) => new ResponsesFacade(surface) as unknown as SwitchboardResponses,
});

/** `sb.responses`: `create` and `parse` as every surface's, the SDK's stream, and `retrieve`. */
class ResponsesFacade extends SurfaceFacade {
  /**
   * The SDK's `ResponseStream` calls `client.responses.create()` (or `.retrieve()` to resume):
   * given this facade as that, its requests are balanced and pinned like any other.
   */
  private readonly client: OpenAI;

  constructor(surface: Surface) {
    super(surface);
    this.client = { responses: this } as unknown as OpenAI;
  }

  stream(body: ResponseStreamParams, options?: OpenAIRequestOptions): unknown {
    return ResponseStream.createResponse(this.client, body, options);
  }

  retrieve(id: string, query?: object, options?: unknown): Promise<unknown> {
    return this.surface.callHolding('retrieve', id, { response_id: id, query }, options);
  }
}

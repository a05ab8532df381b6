import type { ApiOperation, ApiPromiseLike } from '../providers/adapter';
import type { SdkRequestOptions } from '../registry/deployment';
import { renamesModel } from '../providers/wire-model';
import { isSwitchboardField } from '../routing/call-params';
import { SseEvents } from './sse-events';
import {
  readText,
  sendUpstream,
  sendsDirectly,
  webResponse,
  type UpstreamAnswer,
  type UpstreamRequest,
} from './upstream-request';

/**
 * What the relay passes along with a call, in its request options: the client's body as it
 * came and the object parsed from it, so that an unchanged body goes upstream as the client's
 * own bytes.
 */
export interface RelayBody {
  /** The client's body, as it came (undefined: it held the switchboard's own fields). */
  readonly raw: string | Uint8Array | undefined;
  /** What was parsed from it; `session_id` may have been added from the header. */
  readonly parsed: Record<string, unknown>;
  /** Headers the upstream gets besides the deployment's own (content type, `anthropic-beta`). */
  readonly headers: Record<string, string>;
}

/** Where the relay's {@link RelayBody} rides in the request options. */
export const RELAY_BODY: unique symbol = Symbol('relayBody');

/** Request options with the relay's body. */
export type RelayOptions = SdkRequestOptions & { [RELAY_BODY]?: RelayBody };

/** A JSON answer's text and the upstream response it came in, by the object parsed from it. */
const answers = new WeakMap<object, { text: string; response: Response }>();

/**
 * The text and upstream response of a JSON answer a relay operation read.
 *
 * @example
 * ```ts
 * const { text, response } = rawAnswer(answer.data)!;
 * ```
 */
export function rawAnswer(data: unknown): { text: string; response: Response } | undefined {
  return typeof data === 'object' && data !== null ? answers.get(data) : undefined;
}

/** The part of both SDK clients a relay operation calls. */
interface RequestClient {
  post(path: string, options: object): ApiPromiseLike<unknown>;
  get(path: string, options: object): ApiPromiseLike<unknown>;
}

const JSON_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'application/json',
});

/**
 * Whether `body`, as the switchboard is about to send it, still says what the client's bytes
 * say: the same object, or a copy with the same values without the switchboard's own fields. A
 * fallback's model, a usage option added for the stream, or anything else changed: not.
 */
function unchanged(body: Record<string, unknown>, relay: RelayBody): boolean {
  const parsed = relay.parsed;
  if (body === parsed) return true;
  let n = 0;
  for (const key in body) {
    if (body[key] !== parsed[key]) return false;
    n++;
  }
  for (const key in parsed) if (!isSwitchboardField(key)) n--;
  return n === 0;
}

/**
 * An SDK call whose answer is read by the relay: its response as it came (`asResponse()`), and
 * as data the parsed JSON (its text kept, see {@link rawAnswer}) or, for a stream, the
 * upstream's events with their bytes ({@link SseEvents}).
 */
class RelayCall implements ApiPromiseLike<unknown> {
  constructor(
    private readonly sent: ApiPromiseLike<unknown>,
    private readonly stream: boolean,
  ) {}

  asResponse(): Promise<Response> {
    return this.sent.asResponse();
  }

  then<A = unknown, B = never>(
    onfulfilled?: ((value: unknown) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.sent
      .asResponse()
      .then(this.stream ? eventsOf : jsonOf)
      .then(onfulfilled, onrejected);
  }
}

/**
 * A relayed call sent by {@link sendUpstream}: the same answers as {@link RelayCall}, read from
 * Node's stream of the upstream's body.
 */
class DirectCall implements ApiPromiseLike<unknown> {
  private readonly answer: Promise<UpstreamAnswer>;
  private response: Promise<Response> | undefined;

  constructor(
    client: unknown,
    request: UpstreamRequest,
    private readonly stream: boolean,
  ) {
    this.answer = sendUpstream(client, request);
  }

  asResponse(): Promise<Response> {
    return (this.response ??= this.answer.then((answer) => webResponse(answer, this.stream)));
  }

  then<A = unknown, B = never>(
    onfulfilled?: ((value: unknown) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    const data = this.stream
      ? this.asResponse().then(eventsOf)
      : Promise.all([this.answer, this.asResponse()]).then(([answer, response]) =>
          readText(answer.body).then((text) => jsonOfText(text, response)),
        );
    return data.then(onfulfilled, onrejected);
  }
}

const eventsOf = (response: Response): SseEvents => new SseEvents(response);

async function jsonOf(response: Response): Promise<unknown> {
  return jsonOfText(await response.text(), response);
}

function jsonOfText(text: string, response: Response): unknown {
  const data: unknown = JSON.parse(text);
  if (typeof data !== 'object' || data === null) {
    throw new SyntaxError(`Expected a JSON object, got ${data === null ? 'null' : typeof data}`);
  }
  answers.set(data, { text, response });
  return data;
}

/** The SDK's request options for a relayed call: the raw response, and no retries. */
function requestOptions(body: unknown, options: RelayOptions | undefined, headers: object): object {
  return {
    body,
    headers,
    signal: options?.signal ?? undefined,
    timeout: options?.timeout,
    maxRetries: 0,
    __binaryResponse: true,
  };
}

/**
 * An operation that POSTs to `path` on the deployment's client: the client's own bytes when
 * nothing changed them, else the body as the switchboard made it; the answer read raw.
 *
 * @example
 * ```ts
 * const chat = relayPost('/chat/completions');
 * ```
 */
export function relayPost(
  path: string,
  rules: { metered?: boolean; streams?: boolean } = {},
): ApiOperation {
  const canStream = rules.streams !== false;
  return {
    metered: rules.metered,
    streams: canStream ? (body) => body.stream === true : () => false,
    send(client, body, options) {
      const o = options as RelayOptions | undefined;
      const relay = o?.[RELAY_BODY];
      const raw = relay?.raw;
      const same = raw !== undefined && unchanged(body, relay!);
      if (sendsDirectly(client)) {
        const request: UpstreamRequest = {
          method: 'post',
          path,
          parsed: body,
          payload: same ? raw : undefined,
          headers: relay?.headers ?? JSON_HEADERS,
          signal: o?.signal,
          timeout: o?.timeout,
        };
        return new DirectCall(client, request, canStream && body.stream === true);
      }
      // Not the client's bytes: the body as an object, so that the client's hooks (the
      // upstream's name for the model, `toWire`) see it before the SDK serializes it.
      const payload = same && !renamesModel(client, body.model) ? raw : body;
      const sent = (client as RequestClient).post(
        path,
        requestOptions(payload, o, relay?.headers ?? JSON_HEADERS),
      );
      return new RelayCall(sent, canStream && body.stream === true);
    },
  };
}

/**
 * An operation that GETs `path + body.id` (a stored object), its answer read raw.
 *
 * @example
 * ```ts
 * const retrieve = relayGet('/responses/');
 * ```
 */
export function relayGet(path: string): ApiOperation {
  return {
    metered: false,
    streams: () => false,
    send(client, body, options) {
      const o = options as RelayOptions | undefined;
      if (sendsDirectly(client)) {
        const request: UpstreamRequest = {
          method: 'get',
          path: `${path}${encodeURIComponent(String(body.id))}`,
          headers: JSON_HEADERS,
          signal: o?.signal,
          timeout: o?.timeout,
        };
        return new DirectCall(client, request, false);
      }
      const sent = (client as RequestClient).get(
        `${path}${encodeURIComponent(String(body.id))}`,
        requestOptions(undefined, options as RelayOptions | undefined, JSON_HEADERS),
      );
      return new RelayCall(sent, false);
    },
  };
}

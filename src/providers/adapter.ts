import type { SdkRequestOptions } from '../registry/deployment';
import type { Admission, TokenUsage as Usage } from '../quota/admission';
import type { Provider } from '../types';

/**
 * What the switchboard needs of an SDK's `APIPromise` (both SDKs' have it): the raw response, for
 * the rate-limit headers, and the data once the response has come.
 *
 * @example
 * ```ts
 * const sent: ApiPromiseLike<ChatCompletion> = client.chat.completions.create(body);
 * ```
 */
export interface ApiPromiseLike<T = unknown> extends PromiseLike<T> {
  asResponse(): Promise<Response>;
}

/**
 * One SDK method an API surface calls on a deployment's client.
 *
 * @example
 * ```ts
 * const create: ApiOperation<OpenAI> = {
 *   send: (client, body, options) => client.moderations.create(body as never, options),
 * };
 * ```
 */
export interface ApiOperation<Client = unknown> {
  /**
   * Call the SDK client and return its `APIPromise` as it is. The switchboard takes the raw
   * response from it (`asResponse()`) and then its data: what `withResponse()` gives, without
   * the request-id lookup and the `Promise.all` that method adds to every call. The data is
   * asked for only once the response has come, so a failed request leaves no second promise to
   * reject unobserved.
   */
  send(
    client: Client,
    body: Record<string, unknown>,
    options: SdkRequestOptions | undefined,
  ): ApiPromiseLike<unknown>;
  /**
   * What the caller gets instead of the SDK's data, for SDK methods that transform it after
   * the call (`messages.parse()` parses the message, and resolves without its response: its
   * adapter sends `messages.create()` and parses here). Default: the data as it is.
   */
  data?(data: unknown, body: Record<string, unknown>, client: Client): unknown;
  /**
   * Whether the call uses the model's quota: 1 request and the admission estimate charged up
   * front, the answer's usage reconciled. Default true; false for token counting and retrievals.
   */
  metered?: boolean;
  /** Whether a body asks for a stream. Default: `body.stream === true`. */
  streams?(body: Record<string, unknown>): boolean;
}

/** A request body made ready for the SDK, before the estimate is taken. */
export interface PreparedBody {
  body: Record<string, unknown>;
  /** The switchboard asked for usage the caller did not: hide the events that carry only it. */
  hideUsageEvents: boolean;
}

/**
 * What the switchboard gives an adapter to build its facade with.
 *
 * @example
 * ```ts
 * facade: (surface) => ({ create: (body, options) => surface.call('create', body, options) }),
 * ```
 */
export interface Surface {
  /** How callers reach the surface, for messages: `sb.chat.completions`. */
  readonly name: string;
  /**
   * A balanced call of `operations[op]`: `body.model` picks the deployments, `session_id` the
   * affinity; accounting and failover as for every call. Returns the provider SDK's `APIPromise`.
   */
  call(op: string, body: unknown, options?: unknown): Promise<unknown>;
  /**
   * A call that must reach the deployment holding the object `id` (created by a call of this
   * surface), such as `responses.retrieve(id)`. Not metered, never sent elsewhere.
   */
  callHolding(
    op: string,
    id: string,
    body: Record<string, unknown>,
    options?: unknown,
  ): Promise<unknown>;
}

/**
 * Objects that live on the deployment that created them (stored responses): calls that refer to
 * one must go there.
 */
export interface ChainRules {
  /** The id of a stored object this request builds on (`previous_response_id`), if any. */
  refersTo(body: Record<string, unknown>): string | undefined;
  /** The id of the stored object an answer or stream event reports created, if any. */
  created(dataOrEvent: unknown, body: Record<string, unknown>): string | undefined;
}

/**
 * One SDK API surface (chat completions, responses, embeddings, messages, ...): which client
 * methods it calls, how it estimates and reads usage, which stream events it hides, and the
 * facade it mounts on the switchboard. Built-in adapters live in `src/providers/<provider>/`;
 * more can be passed as `createSwitchboard({ adapters: [...] })`.
 *
 * @example
 * ```ts
 * const moderations: ApiAdapter<{ create(body: ModerationCreateParams): Promise<ModerationCreateResponse> }, OpenAI> = {
 *   name: 'moderations', path: ['moderations'], provider: 'openai',
 *   operations: { create: { send: (c, b, o) => c.moderations.create(b as never, o) } },
 *   admission: (body) => ({ input: Math.ceil(String(body.input).length / 4), output: 0 }),
 *   usage: () => undefined,
 *   facade: (surface) => ({ create: (body) => surface.call('create', body) as never }),
 * };
 * ```
 */
export interface ApiAdapter<Facade extends object = object, Client = unknown> {
  /** Name for messages and errors, as callers write it after `sb.`: `chat.completions`. */
  readonly name: string;
  /** Where the facade is mounted on the switchboard: `['chat', 'completions']`. */
  readonly path: readonly string[];
  /** Which deployments serve it. */
  readonly provider: Provider;
  /** The SDK methods it calls, by name. */
  readonly operations: Readonly<Record<string, ApiOperation<Client>>>;
  /**
   * What the upstream charges a request at admission: the prompt estimate (text chars / 4) and
   * the output it reserves (the request's cap; `defaultOutput`, from the switchboard's
   * `defaultReservation`, when it sets none; 0 for APIs without output).
   */
  admission(body: Record<string, unknown>, defaultOutput: number): Admission;
  /** Usage an answer reports, if any. */
  usage(data: unknown): Usage | undefined;
  /**
   * Cumulative usage of a stream as of this event, if the event tells; `memo` starts at zero and
   * keeps what earlier events of the same stream said.
   */
  streamUsage?(event: unknown, memo: Usage): Usage | undefined;
  /**
   * Change what a streaming request sends so its usage can be read (`include_usage`): unless the
   * caller chose, or, with `force` (an answer that must be settled), always.
   */
  prepareStream?(body: Record<string, unknown>, force?: boolean): PreparedBody;
  /** Whether a stream event carries only the usage the switchboard asked for. */
  isUsageEvent?(event: unknown): boolean;
  /** Stored objects that pin later calls to one deployment. */
  readonly chain?: ChainRules;
  /** The object mounted at {@link path}. */
  facade(surface: Surface): Facade;
}

/**
 * Checks an adapter's shape and keeps its facade type and its literal `path`, so the
 * switchboard's type shows the facade where it is mounted. Curried: the first call takes the
 * facade and client types, the second infers the path.
 *
 * @example
 * ```ts
 * export const moderations = defineAdapter<ModerationsFacade, OpenAI>()({ path: ['moderations'], ... });
 * ```
 */
export function defineAdapter<Facade extends object, Client = unknown>() {
  return <const Path extends readonly string[]>(
    adapter: ApiAdapter<Facade, Client> & { readonly path: Path },
  ): AdapterAt<Facade, Client, Path> => adapter;
}

/** An adapter whose path is known to the type system. */
export type AdapterAt<Facade extends object, Client, Path extends readonly string[]> = Omit<
  ApiAdapter<Facade, Client>,
  'path'
> & { readonly path: Path };

/** The object an adapter mounts on the switchboard, nested along its path. */
export type Mounted<A> = A extends {
  facade(surface: Surface): infer Facade;
  readonly path: infer Path;
}
  ? Nest<Path, Facade>
  : never;

type Nest<Path, Facade> = Path extends readonly [infer Head extends string, ...infer Rest]
  ? { readonly [K in Head]: Rest extends readonly [] ? Facade : Nest<Rest, Facade> }
  : never;

type Intersect<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void
  ? I
  : never;

/** Every facade of a list of adapters, mounted along their paths. */
export type SurfacesOf<Adapters extends readonly unknown[]> = Intersect<
  { [K in keyof Adapters]: Mounted<Adapters[K]> }[number]
>;

import type { ApiAdapter } from '../providers/adapter';
import type { PreparedRequest } from '../providers/attempt-types';
import type { Answer, Deployment } from '../registry/deployment';
import type { SharedValues } from '../state/state-store';
import type { TagSet } from '../placement/tags';
import type { Provider, SwitchboardLogger, TokenUsage } from '../types';
import { CACHED_APIS } from './answer-verdict';
import { readEntry, MAX_SHARED_ENTRY, type CacheEntry, type EntryKind } from './cache-entry';
import { cacheKey } from './cache-key';
import { DEFAULT_CACHE_BYTES, type CacheOptions } from './cache-options';
import type { CacheTelemetry } from './cache-telemetry';
import { CachedAnswer } from './cached-answer';
import { MemoryEntries, type Held } from './memory-entries';
import { keptRequest, requestOf, type KeptRequest, type RequestKey } from './request-print';
import { servedEntry, type ServedEntry } from './served-entry';
import { Recorder, type Recorded } from './stream-recorder';

/** Where the cache's decision rides in a call's request options, once it is taken. */
const DECIDED: unique symbol = Symbol('cacheDecided');

/** A recorder for the request a call is sent with. */
type RecorderOf = (request: PreparedRequest) => Recorder;

type Decided = { [DECIDED]?: RecorderOf | null };

/**
 * What the cache needs to know of one call, read by the router from its params.
 *
 * @example
 * ```ts
 * const call: CacheCall = { adapter, opName: 'create', body, tenant: 'acme', required: undefined,
 *   stream: false, off: false, deployment: pool[0] };
 * ```
 */
export interface CacheCall {
  adapter: ApiAdapter;
  /** The SDK method (`create`, `parse`), or `fetch` for `sb.fetch`, whose answers are the wire's. */
  opName: string;
  /** The body as the upstream gets it: the switchboard's own fields removed. */
  body: Record<string, unknown>;
  tenant: string | undefined;
  /** The tags a deployment must carry to take the call (its own and its tenant's). */
  required: TagSet | undefined;
  stream: boolean;
  /** `cache: false`, `cache-control: no-store` or `x-switchboard-cache: off`. */
  off: boolean;
  /** A deployment of the call's provider, whose SDK's `Stream` class replays a stream. */
  deployment: Deployment;
}

/**
 * What a switchboard's cache is built with, besides its options.
 *
 * @example
 * ```ts
 * new ResponseCache({ ttl: 60_000 }, { clock: Date.now, logger, telemetry, bytesOf, price: () => undefined });
 * ```
 */
interface CacheContext {
  clock: () => number;
  logger: SwitchboardLogger;
  telemetry: CacheTelemetry;
  /** Entries shared with the other replicas (the state store's), if any. */
  shared?: SharedValues;
  /** The bytes an event of `sb.fetch`'s stream came in. */
  bytesOf: (event: unknown) => Uint8Array | undefined;
  /** USD of `usage` of `model` at `deployment`, when it has a price. */
  price(
    deployment: string,
    model: string,
    usage: TokenUsage,
    provider: Provider,
  ): number | undefined;
}

/**
 * The response cache: exact answers served again, keyed by a digest of the tenant, the operation
 * and the canonical body, only to the same tenant and only where the deployment that made the
 * answer carries every tag the call requires. Calls that build on state held upstream are left
 * alone; only complete successes are kept (tool calls with `cacheToolCalls`); streams once they
 * ended normally. A hit picks no deployment and charges nothing. Entries live in memory (LRU,
 * bounded by `maxBytes`) and, with a shared store, there too, checked when read back.
 *
 * @example
 * ```ts
 * const cache = new ResponseCache({ ttl: 60_000 }, context);
 * return cache.serve(call, options, (decided) => router.call(entry, params, decided));
 * ```
 */
export class ResponseCache {
  private readonly memory: MemoryEntries;
  private readonly ttl: number;
  private readonly models: ReadonlySet<string> | undefined;
  private readonly toolCalls: boolean;
  private readonly shared: SharedValues | undefined;

  constructor(
    options: CacheOptions,
    private readonly context: CacheContext,
  ) {
    this.ttl = options.ttl;
    this.memory = new MemoryEntries(options.maxBytes ?? DEFAULT_CACHE_BYTES);
    this.models = options.models === undefined ? undefined : new Set(options.models);
    this.toolCalls = options.cacheToolCalls === true;
    this.shared = context.shared;
  }

  /** The switchboard closed: the answers held in memory go (a closed switchboard serves none). */
  close(): void {
    this.memory.clear();
  }

  /** Whether the cache already took its decision for a call made with these request options. */
  decided(options: unknown): boolean {
    return typeof options === 'object' && options !== null && DECIDED in options;
  }

  /** Whether calls of `adapter` for `model` are the cache's at all. */
  covers(adapter: ApiAdapter, model: unknown): boolean {
    return (
      CACHED_APIS.has(adapter.name) &&
      typeof model === 'string' &&
      (this.models === undefined || this.models.has(model))
    );
  }

  /**
   * Answer `call` from the cache, or `send` it with the decision in its options (then
   * {@link recording} watches its answer when it may be kept).
   */
  serve(
    call: CacheCall,
    options: unknown,
    send: (decided: object) => Promise<Answer>,
  ): Promise<Answer> {
    if (call.off || heldUpstream(call)) return this.bypass(call, options, send);
    const now = this.context.clock();
    // A repeated call is found by its request alone, before the canonical body and its digest.
    const request = requestOf(call.tenant ?? '', call.adapter.name, call.opName, call.body);
    const again = this.memory.byRequest(request, now);
    if (again !== undefined && servesTags(again.entry, call.required)) return this.hit(call, again);
    return this.look(call, { options, send, request, again, now });
  }

  /** A call its request did not find an answer for: found by its key, in memory or shared, or sent. */
  private look(
    call: CacheCall,
    at: {
      options: unknown;
      send: (decided: object) => Promise<Answer>;
      request: RequestKey;
      again: Held | undefined;
      now: number;
    },
  ): Promise<Answer> {
    const { options, send, request } = at;
    const key = this.keyOf(call);
    if (key === undefined) return this.bypass(call, options, send);
    const model = call.body.model as string;
    const kind: EntryKind = !call.stream ? 'json' : call.opName === 'fetch' ? 'sse' : 'events';
    const found = at.again ?? this.memory.held(key, at.now);
    if (found !== undefined && servesTags(found.entry, call.required)) {
      this.memory.alias(found, request);
      return this.hit(call, found);
    }
    const { telemetry } = this.context;
    // Copied now: the caller may change its params before the answer comes.
    const kept = keptRequest(request);
    const recorder: RecorderOf = (prepared) =>
      new Recorder(
        { api: call.adapter.name, model, kind, bytesOf: this.context.bytesOf },
        prepared,
        (made) => this.keep({ key, model, kind, request: kept }, made),
      );
    const shared = this.shared;
    if (shared === undefined || found !== undefined) {
      telemetry.count(model, 'miss');
      return send(decide(options, recorder));
    }
    return shared.get(`cache:${key}`).then((text) => {
      const entry = text === undefined ? undefined : this.checked(text, { key, model, kind });
      if (entry !== undefined && servesTags(entry, call.required)) {
        const held = this.memory.put(entry, kept);
        return this.hit(call, held ?? unheld(entry));
      }
      telemetry.count(model, 'miss');
      return send(decide(options, recorder));
    });
  }

  /** The request a call is sent with: watched by a recorder when its answer may be kept. */
  recording(options: unknown, request: PreparedRequest): PreparedRequest {
    const make = (options as Decided | undefined)?.[DECIDED];
    return typeof make === 'function' ? { ...request, track: make(request) } : request;
  }

  private keyOf(call: CacheCall): string | undefined {
    return cacheKey(call.tenant ?? '', `${call.adapter.name}.${call.opName}`, call.body);
  }

  private bypass(
    call: CacheCall,
    options: unknown,
    send: (decided: object) => Promise<Answer>,
  ): Promise<Answer> {
    this.context.telemetry.count(call.body.model as string, 'bypass');
    return send(decide(options, null));
  }

  private hit(call: CacheCall, held: Held): Promise<Answer> {
    let data: unknown;
    let served = held.served;
    try {
      served ??= held.served = this.serving(call, held.entry);
      data = served.data(call.deployment);
    } catch (error) {
      return Promise.reject(error);
    }
    this.context.telemetry.hit(served.hit, served.usd);
    return Promise.resolve(new CachedAnswer(data, held.entry, call.adapter.name));
  }

  /** What every hit of `entry` reuses: its parsed answer, its description, the USD it saves. */
  private serving(call: CacheCall, entry: CacheEntry): ServedEntry {
    const provider = call.deployment.provider;
    const { model, deployment, usage } = entry;
    const usd =
      usage === undefined ? undefined : this.context.price(deployment, model, usage, provider);
    const embeddings = call.adapter.name === 'embeddings';
    return servedEntry(entry, { model, provider, deployment, embeddings }, usd);
  }

  private keep(
    at: { key: string; model: string; kind: EntryKind; request: KeptRequest | undefined },
    made: Recorded,
  ): void {
    if (!made.verdict.complete || (made.verdict.tools && !this.toolCalls)) return;
    const { key, model, kind } = at;
    const entry: CacheEntry = {
      v: 1,
      key,
      model,
      kind,
      deployment: made.deployment.name,
      tags: [...made.deployment.tags],
      expires: this.context.clock() + this.ttl,
    };
    if (made.usage !== undefined) entry.usage = made.usage;
    if (made.body !== undefined) entry.body = made.body;
    if (made.events !== undefined) entry.events = made.events;
    this.memory.put(entry, at.request);
    if (this.shared === undefined) return;
    const text = JSON.stringify(entry);
    if (text.length <= MAX_SHARED_ENTRY) this.shared.set(`cache:${key}`, text, this.ttl);
  }

  /** An entry read from the shared store, or `undefined` (with one log line) when refused. */
  private checked(
    text: string,
    expect: { key: string; model: string; kind: EntryKind },
  ): CacheEntry | undefined {
    const entry = readEntry(text, { ...expect, now: this.context.clock(), ttl: this.ttl });
    if (typeof entry !== 'string') return entry;
    // Expiry races are not another writer's doing.
    if (entry !== 'expired') {
      this.shared!.skipped(
        `a response cache entry ${entry} (key cache:${expect.key.slice(0, 12)}…)`,
      );
    }
    return undefined;
  }
}

/** Request options carrying the cache's decision: `null`, not kept; else its recorder's maker. */
function decide(options: unknown, recorder: RecorderOf | null): object {
  return { ...(options as object | undefined), [DECIDED]: recorder };
}

/**
 * Calls whose answer depends on, or creates, state held upstream: a chained or conversation
 * Responses call, and any Responses call that stores its response (the API's default).
 */
function heldUpstream(call: CacheCall): boolean {
  const body = call.body;
  if (body.previous_response_id != null || body.conversation != null) return true;
  return call.adapter.name === 'responses' && body.store !== false;
}

/** Whether the deployment that made `entry` carries every tag the call requires. */
function servesTags(entry: CacheEntry, required: TagSet | undefined): boolean {
  return required === undefined || required.tags.every((tag) => entry.tags.includes(tag));
}

/** An entry served once without being held (larger than the memory store allows). */
function unheld(entry: CacheEntry): Held {
  return { entry, bytes: 0, request: undefined, served: undefined };
}

import { inspect, type InspectOptions } from 'node:util';
import type { ModelState } from './model-state';

/** Which API a deployment speaks. */
export type Provider = 'openai' | 'anthropic';

/** The SDK call a switchboard call maps to. */
export type Operation = 'create' | 'parse';

/** The SDK's own error classes, so errors the switchboard raises look like the SDK's. */
export interface ProviderErrors {
  APIError: new (
    status: number | undefined,
    error: object | undefined,
    message: string | undefined,
    headers: Headers | undefined,
  ) => Error;
  APIConnectionError: new (options: { message?: string; cause?: Error }) => Error;
  APIConnectionTimeoutError: new (options?: { message?: string }) => Error;
  APIUserAbortError: new (options?: { message?: string }) => Error;
}

/** Request options the switchboard passes to the SDK (a subset of both SDKs' `RequestOptions`). */
export interface SdkRequestOptions {
  signal?: AbortSignal | null;
  timeout?: number;
  maxRetries?: number;
  headers?: unknown;
  [key: string]: unknown;
}

/** A request body made ready for the SDK, with its preflight token estimate. */
export interface PreparedRequest {
  body: Record<string, unknown>;
  stream: boolean;
  estimate: number;
  /** The switchboard asked for usage the caller did not: hide the usage-only chunk. */
  hideUsageChunk: boolean;
}

/**
 * One deployment: a client for one endpoint and key, and the models it serves with their state.
 *
 * @example
 * ```ts
 * for (const [name, deployment] of sb.deployments) {
 *   console.log(name, deployment.provider, [...deployment.models.keys()]);
 * }
 * ```
 */
export abstract class Deployment {
  abstract readonly provider: Provider;

  protected constructor(
    /** Unique name from the configuration. */
    readonly name: string,
    /** Models served, by name, with their usage and cooldown state. */
    readonly models: ReadonlyMap<string, ModelState>,
    /** Per-request deadline in ms. */
    readonly timeout: number,
  ) {}

  /** @internal The SDK's error classes. */
  abstract readonly errors: ProviderErrors;

  /** @internal Split the switchboard's fields off, add what accounting needs, estimate tokens. */
  abstract prepare(body: Record<string, unknown>): PreparedRequest;

  /** @internal Send through the SDK client. */
  abstract send(
    op: Operation,
    body: Record<string, unknown>,
    options: SdkRequestOptions,
  ): Promise<unknown>;

  /** @internal Total tokens a non-streaming response reports, if any. */
  abstract usageOf(result: unknown): number | undefined;

  /**
   * @internal Cumulative total tokens as of this stream event, if the event tells. `memo` keeps
   * what earlier events of the same stream said.
   */
  abstract streamUsage(event: unknown, memo: { input: number }): number | undefined;

  /** @internal Build the SDK's own `Stream` over an iterator. */
  abstract makeStream(iterator: () => AsyncIterator<unknown>, controller: AbortController): unknown;

  /** @internal Whether a stream event is the usage-only chunk the caller did not ask for. */
  isUsageChunk(_event: unknown): boolean {
    return false;
  }

  toString(): string {
    return `Deployment(${this.name})`;
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      provider: this.provider,
      models: Object.fromEntries([...this.models].map(([k, v]) => [k, v.toJSON()])),
    };
  }

  /**
   * What `console.log`, `util.inspect` and Nest's `Logger` print: the {@link toJSON} view. The
   * SDK client is left out: it holds the API key.
   */
  [inspect.custom](_depth: number, options: InspectOptions): string {
    return `${this.constructor.name} ${inspect(this.toJSON(), options)}`;
  }
}

import { inspect, type InspectOptions } from 'node:util';
import type { RateLimitErrorClass } from '../quota/no-room';
import type { DeploymentConfig, Provider } from '../types';
import type { ModelState } from './model-state';

export type { Provider } from '../types';

/** The name of an SDK method a switchboard call maps to (`create`, `parse`, `retrieve`, ...). */
export type Operation = string;

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
  RateLimitError: RateLimitErrorClass;
}

/** Request options the switchboard passes to the SDK (a subset of both SDKs' `RequestOptions`). */
export interface SdkRequestOptions {
  signal?: AbortSignal | null;
  timeout?: number;
  maxRetries?: number;
  headers?: unknown;
  [key: string]: unknown;
}

/**
 * What a successful attempt resolves with: the SDK's parsed data and the raw `Response` it came
 * from. Shaped as the SDKs' `APIPromise` expects its response props, so the SDK's own class can
 * wrap it without another copy.
 */
export interface Answer {
  data: unknown;
  response: Response;
  /** Always empty: what the SDKs' `APIPromise` reads its tracing options from. */
  options: Record<string, never>;
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

  /** Unique name from the configuration. */
  readonly name: string;
  /** Per-request deadline in ms (default 30 000). */
  readonly timeout: number;
  /**
   * What it is, for calls that require it (`tags: ['eu']`): a call with tags only goes to a
   * deployment carrying every one of them.
   */
  readonly tags: readonly string[];

  protected constructor(
    config: Pick<DeploymentConfig, 'name' | 'timeout' | 'tags'>,
    /** Models served, by name, with their usage and cooldown state. */
    readonly models: ReadonlyMap<string, ModelState>,
  ) {
    this.name = config.name;
    this.timeout = config.timeout ?? 30_000;
    this.tags = Object.freeze([...(config.tags ?? [])]);
  }

  /** @internal The SDK's error classes. */
  abstract readonly errors: ProviderErrors;

  /** @internal The SDK client (typed by each provider's subclass). */
  abstract readonly client: unknown;

  /** @internal Build the SDK's own `Stream` over an iterator. */
  abstract makeStream(iterator: () => AsyncIterator<unknown>, controller: AbortController): unknown;

  toString(): string {
    return `Deployment(${this.name})`;
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      provider: this.provider,
      ...(this.tags.length > 0 ? { tags: this.tags } : {}),
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

/**
 * What the registry needs of a provider (one SDK) to build its deployments: the deployment
 * itself (how its upstream charges is its quota rules', chosen by kind of upstream). Whoever builds a registry hands it
 * the providers' kits (each one is a `ProviderKit`), so the registry does not reach up for them.
 *
 * @example
 * ```ts
 * const builders: DeploymentBuilders = { openai: openaiProvider, anthropic: anthropicProvider };
 * ```
 */
export interface DeploymentBuilder<Config extends DeploymentConfig = DeploymentConfig> {
  deployment(config: Config, models: ReadonlyMap<string, ModelState>): Deployment;
}

/** One {@link DeploymentBuilder} per provider, each for its own kind of configuration. */
export type DeploymentBuilders = {
  readonly [P in Provider]: DeploymentBuilder<Extract<DeploymentConfig, { provider: P }>>;
};

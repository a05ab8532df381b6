import type { ApiPromiseLike } from '../providers/adapter';

/** The SDK-like promise of a replayed answer: its head and data come together. */
class ReplayedAnswer {
  constructor(readonly responsePromise: Promise<{ response: Response; data: unknown }>) {}

  asResponse(): Promise<Response> {
    return this.responsePromise.then((r) => r.response);
  }

  then<A = unknown, B = never>(
    onData?: ((data: unknown) => A | PromiseLike<A>) | null,
    onFailure?: ((error: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.responsePromise.then(
      onData ? (r) => onData(r.data) : undefined,
      onFailure,
    ) as Promise<A | B>;
  }
}

/**
 * A replayed answer as the switchboard's call path takes an SDK's promise.
 *
 * @example
 * ```ts
 * return answered(Promise.resolve({ response, data: { usage } }));
 * ```
 */
export function answered(
  done: Promise<{ response: Response; data: unknown }>,
): ApiPromiseLike<unknown> {
  return new ReplayedAnswer(done) as ApiPromiseLike<unknown>;
}

/**
 * The headers of an answer, as far as the switchboard reads them (`get`, `has`): a `Headers`
 * object validates and copies every value, which a million answers pay for in seconds.
 *
 * @example
 * ```ts
 * new ReadOnlyHeaders({ 'x-ratelimit-remaining-tokens': 900 }).get('X-RateLimit-Remaining-Tokens'); // '900'
 * ```
 */
export class ReadOnlyHeaders {
  constructor(private readonly values: Readonly<Record<string, string | number>>) {}

  get(name: string): string | null {
    const value = this.values[name.toLowerCase()];
    return value === undefined ? null : String(value);
  }

  has(name: string): boolean {
    return this.values[name.toLowerCase()] !== undefined;
  }
}

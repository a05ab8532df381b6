import { describeFailure } from './redis-connection';

/** What a dropped connection is reported as, when nothing better is known. */
export const CLOSED = 'connection closed';

/**
 * Whether a Redis store can be reached, with one warning per outage: the first failure logs,
 * the next successful round trip ends it (and says so).
 *
 * @example
 * ```ts
 * const outage = new Outage({ warn: (l) => logger.warn(l), log: (l) => logger.log(l), scrub, closed: () => false });
 * outage.degrade(new Error('connect ECONNREFUSED'));
 * outage.problem; // 'connect ECONNREFUSED'
 * ```
 */
export class Outage {
  /** What went wrong, while the store cannot be reached; `undefined` while it can. */
  problem: string | undefined;

  constructor(
    private readonly out: {
      warn(line: string): void;
      log(line: string): void;
      scrub(text: string): string;
      closed(): boolean;
    },
  ) {}

  degrade(reason: unknown): void {
    if (this.out.closed()) return;
    const message = this.out.scrub(describeFailure(reason));
    if (this.problem !== undefined) {
      // Keep the cause, not the 'connection closed' that follows it.
      if (reason !== CLOSED) this.problem = message;
      return;
    }
    this.problem = message;
    this.out.warn(
      `Redis state store unavailable (${message}): carrying on with local usage, cooldowns and sessions until it is back`,
    );
  }

  recover(): void {
    if (this.problem === undefined) return;
    this.problem = undefined;
    this.out.log('Redis state store reachable again: sharing usage, cooldowns and sessions');
  }
}

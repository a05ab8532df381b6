import { PEER_PROBLEMS, type PeerProblem } from './peer-checks';

/**
 * The warnings about values another writer left in the store: one line per kind of bad value
 * (with the first value seen), again only after a full sync has found none of that kind; one
 * line per kind of bad session or response key, ever.
 *
 * @example
 * ```ts
 * const log = new ProblemLog((line) => logger.warn(line), () => 'switchboard:3f1c2a9b7d4e:');
 * log.sync(problems, true);
 * ```
 */
export class ProblemLog {
  /** Kinds of bad values already logged. */
  private readonly logged = new Set<PeerProblem>();
  private readonly loggedKeys = new Set<string>();

  constructor(
    private readonly warn: (line: string) => void,
    private readonly prefix: () => string | undefined,
  ) {}

  /** What one sync skipped; `full`: it read usage too (a sync that did not cannot clear a kind). */
  sync(problems: ReadonlyMap<PeerProblem, string>, full: boolean): void {
    for (const [kind, example] of problems) {
      if (this.logged.has(kind)) continue;
      this.logged.add(kind);
      this.line(`${PEER_PROBLEMS[kind]} (first: ${example})`);
    }
    if (!full) return;
    for (const kind of this.logged) {
      if (!problems.has(kind)) this.logged.delete(kind);
    }
  }

  /** A session or response key was skipped (`what` says why). */
  key(what: string): void {
    if (this.loggedKeys.has(what)) return;
    this.loggedKeys.add(what);
    this.line(`skipped ${what}`);
  }

  private line(what: string): void {
    this.warn(
      `Redis state store: ${what} under '${this.prefix() ?? ''}'; another writer shares this prefix (set redisState({ prefix }) to part from it). Logged once.`,
    );
  }
}

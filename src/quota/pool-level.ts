import type { Admission, ChargeUnit } from './admission';
import { hotRow } from './hot-row';
import { DEFAULT_SPAN, LedgerReadout } from './ledger-readout';
import { counterScope, type CounterScope, type LimitCounter } from './limit-counter';
import { limitsOf, type LimitName } from './quota-limit';
import type { LedgerCounters, QuotaRules } from './rules/quota-rules';
import type { UsageCounter } from './usage-counter';

/** The limits of one level of a quota pool path (`SwitchboardOptions.quotaPools['org']`). */
export type PoolLimits = Partial<Record<LimitName, number>>;

/**
 * One level of a quota pool path above the models' own pools (`org` above `org/project`, or
 * `sub/region` above `sub/region/standard`): its configured limits, counted over every call of
 * every model whose `quotaPool` is it or lies under it, by the rules of its members' upstream
 * (OpenAI's buckets, Azure's windows). Each member's ledger asks its counters ({@link gates}) as
 * it asks its own: a call goes only where every level has room, and is charged at each.
 *
 * No upstream header speaks of a level above the key's own pool: a level counts what this
 * switchboard sent, plus what each member's own headers say its pool counts beyond that (the
 * upstream's token count of a prompt, others' calls): a project's excess is its organization's.
 *
 * @example
 * ```ts
 * const org = new PoolLevel('org', { tpm: 100_000 }, rulesFor('openai'), Date.now);
 * new QuotaLedger({ tpm: 60_000 }, Date.now, { upstream: 'openai', levels: [org] });
 * ```
 */
export class PoolLevel extends LedgerReadout {
  /** The level's counters with a limit in force, as limits of each member's ledger. */
  readonly gates: readonly LevelCounter[];
  /** The counters of each member's ledger (one per pool below the level), and how to gate it. */
  private readonly members: {
    counters: LedgerCounters;
    scope: CounterScope;
    gate: (gates: readonly LimitCounter[]) => void;
  }[] = [];

  constructor(
    /** The level's path (`org`, `sub/region`). */
    readonly path: string,
    configured: PoolLimits,
    rules: QuotaRules,
    clock: () => number,
  ) {
    const limits = limitsOf(configured);
    const scope = counterScope(DEFAULT_SPAN);
    // A level counts every member's calls: each member's own ledger ramps its own.
    const counters = rules.counters({ limits, clock, scope, outputWeight: undefined, ramp: false });
    super({ limits, rules, counters, scope, hot: hotRow(), clock });
    const { tokens, requests, input, output } = counters;
    this.gates = [tokens, requests, input, output]
      .filter((c) => c.limit.value > 0)
      .map((c) => new LevelCounter(c, (now) => this.beyond(c.unit, now)));
  }

  /**
   * A member ledger's counters, whose corrections the level adds to its own count, and the way to
   * add limits to what gates its admissions ({@link gate}).
   */
  join(
    counters: LedgerCounters,
    scope: CounterScope,
    gate: (gates: readonly LimitCounter[]) => void,
  ): void {
    this.members.push({ counters, scope, gate });
  }

  /**
   * Limits that gate every member's admissions beside the level's own count: a shared store's
   * leases of the level, so that replicas together stay within it.
   */
  gate(gates: readonly LimitCounter[]): void {
    for (const member of this.members) member.gate(gates);
  }

  /** What the members' headers say their pools count of `unit` beyond their own count, at `now`. */
  private beyond(unit: ChargeUnit, now: number): number {
    let sum = 0;
    for (const { counters, scope } of this.members) {
      const c = counters[unit].correction.at(now, scope.span);
      if (c > 0) sum += c;
    }
    return sum;
  }
}

/**
 * One limit of a {@link PoolLevel}, as a limit of a member's ledger: the level's own counter,
 * except that a call it admits leaves no mark of its send order (the member's own counters keep
 * those, to match their answers; no answer speaks of the level).
 *
 * @example
 * ```ts
 * const gate = new LevelCounter(level.tokens);
 * ```
 */
export class LevelCounter implements LimitCounter {
  readonly unit: ChargeUnit;

  constructor(
    readonly counter: UsageCounter,
    /** What the members' pools count beyond this switchboard's calls, at `now`. */
    private readonly beyond: (now: number) => number = () => 0,
  ) {
    this.unit = counter.unit;
  }

  charge(admission: Admission): number {
    return this.counter.charge(admission);
  }

  /** The charge of `admission` when it is above the level's limit itself (it can never fit). */
  exceeds(admission: Admission): number | undefined {
    return this.counter.exceeds(admission);
  }

  room(now: number, admission?: Admission): number {
    return this.counter.room(now, admission) - this.beyond(now);
  }

  share(now: number): number {
    return this.counter.share(now) + this.beyond(now) / this.counter.limit.value;
  }

  changesAt(now: number): number {
    return this.counter.changesAt(now);
  }

  wait(admission: Admission, now: number): number {
    const wait = this.counter.wait(admission, now);
    const short = this.charge(admission) - this.room(now, admission);
    // The excess fades, or drains, at the limit's pace at the latest.
    const limit = this.counter.limit.value;
    return short > 0 ? Math.max(wait, Math.ceil((short * DEFAULT_SPAN) / limit)) : wait;
  }

  admit(admission: Admission, now: number): void {
    const charge = this.counter.charge(admission);
    this.counter.window.add(charge, now);
    this.counter.inFlight += charge;
  }

  answered(admission: Admission): void {
    this.counter.answered(admission);
  }

  settle(input: number, output: number, now: number): void {
    this.counter.settle(input, output, now);
  }

  catchUp(now: number): void {
    this.counter.catchUp(now);
  }

  reset(): void {
    this.counter.reset();
  }
}

/**
 * The first of a pool's level limits `admission` can never fit (its charge is above the limit
 * itself), or `undefined`.
 *
 * @example
 * ```ts
 * tooBigAbove(org.gates, { input: 200_000, output: 1_000 }); // { limit: 'tpm', value: 100000, charge: 201000 }
 * ```
 */
export function tooBigAbove(
  gates: readonly LevelCounter[],
  admission: Admission,
): { limit: LimitName; value: number; charge: number } | undefined {
  for (const gate of gates) {
    const charge = gate.exceeds(admission);
    const { name, value } = gate.counter.limit;
    if (charge !== undefined) return { limit: name, value, charge };
  }
  return undefined;
}

/**
 * The configured levels of quota pool paths (`SwitchboardOptions.quotaPools`), each built once,
 * by the rules of the first model under it, and shared by every model under it.
 *
 * @example
 * ```ts
 * const levels = new PoolLevels({ org: { tpm: 100_000 } }, Date.now);
 * levels.of('org/project', rulesFor('openai')); // [the level 'org']
 * ```
 */
export class PoolLevels {
  private readonly built = new Map<string, PoolLevel>();

  constructor(
    private readonly configured: Readonly<Record<string, PoolLimits>> | undefined,
    private readonly clock: () => number,
  ) {}

  /** Every level built so far, by path. */
  get all(): ReadonlyMap<string, PoolLevel> {
    return this.built;
  }

  /**
   * The configured levels a model with quota pool `path` belongs to, from the top down: each
   * prefix of the path (at a `/`) that the configuration names, the path itself included.
   */
  of(path: string | undefined, rules: QuotaRules): PoolLevel[] {
    const configured = this.configured;
    if (path === undefined || configured === undefined) return [];
    const parts = path.split('/');
    const levels: PoolLevel[] = [];
    for (let i = 1; i <= parts.length; i++) {
      const at = parts.slice(0, i).join('/');
      const limits = Object.hasOwn(configured, at) ? configured[at] : undefined;
      if (limits === undefined) continue;
      let level = this.built.get(at);
      if (level === undefined)
        this.built.set(at, (level = new PoolLevel(at, limits, rules, this.clock)));
      levels.push(level);
    }
    return levels;
  }
}

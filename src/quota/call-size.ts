import type { Admission } from './admission';
import type { CounterScope, LimitCounter } from './limit-counter';
import { tooBigAbove, type LevelCounter } from './pool-level';
import type { LimitName, QuotaLimit } from './quota-limit';
import type { UsageCounter } from './usage-counter';

/**
 * The limits a single call can be too big for (its charge above the limit itself: no wait makes
 * it fit), a ledger's own and its pool's levels', and the probe a limit learned from headers
 * owes: a header may have said too little (a proxy, a limit lowered for a moment), so one call a
 * window goes, and its answer says the limit again.
 *
 * @example
 * ```ts
 * const size = new CallSize([tokens, input, output], [], scope);
 * size.tooBig({ input: 200_000, output: 1_000 }, now); // { limit: 'tpm', value: 100000, charge: 201000 }
 * ```
 */
export class CallSize {
  constructor(
    private readonly capped: readonly UsageCounter[],
    private readonly levels: readonly LevelCounter[],
    private readonly scope: CounterScope,
  ) {}

  /**
   * The limit of `counter` a call may probe at `now`: only a value learned from headers says it
   * can never fit, and no probe went this window.
   */
  probe(counter: LimitCounter, admission: Admission, now: number): QuotaLimit | undefined {
    if (!this.capped.includes(counter as UsageCounter)) return undefined;
    const limit = (counter as UsageCounter).limit;
    return limit.probeDue(counter.charge(admission), now, this.scope.span) ? limit : undefined;
  }

  /** A call is sent at `now`: the probes it makes are gone for the window. */
  probed(admission: Admission, now: number): void {
    // Every call is admitted: the counters are the capped ones already, and only a learned value
    // owes a probe (see `QuotaLimit.probeDue`), so a configured limit costs one check.
    for (const counter of this.capped) {
      const limit = counter.limit;
      if (limit.learned && limit.probeDue(counter.charge(admission), now, this.scope.span)) {
        limit.probed(now);
      }
    }
  }

  /** Whether any limit a call can be too big for came from the headers (it may owe a probe). */
  anyLearned(): boolean {
    return this.capped.some((counter) => counter.limit.learned);
  }

  /** The first limit `admission` can never fit, where no probe is owed; else `undefined`. */
  tooBig(
    admission: Admission,
    now: number,
  ): { limit: LimitName; value: number; charge: number } | undefined {
    for (const counter of this.capped) {
      const charge = counter.exceeds(admission);
      if (charge === undefined || counter.limit.probeDue(charge, now, this.scope.span)) continue;
      return { limit: counter.limit.name, value: counter.limit.value, charge };
    }
    return tooBigAbove(this.levels, admission);
  }
}

import { BurstCounter } from '../burst-counter';
import { DrainCount, type UsageCount } from '../drain-count';
import { InputCounter } from '../input-counter';
import { OutputCounter } from '../output-counter';
import { OutputEstimate } from '../output-estimate';
import type { QuotaLimit } from '../quota-limit';
import { Ramp, type RampPlan } from '../ramp';
import { RequestsCounter } from '../requests-counter';
import { ShortBucketCounter } from '../short-bucket-counter';
import { TokensCounter } from '../tokens-counter';
import { UtilizationCounter } from '../utilization-counter';
import { WindowCount } from '../window-count';
import type { CounterBuild, LedgerCounters } from './quota-rules';

/** How an upstream keeps one limit's usage: a window it slides out of, or a bucket it drains from. */
type Meter = 'window' | 'bucket';

/**
 * What one kind of upstream counts, and how: each limit's meter, the requests of a shorter
 * interval (`'window'`: Azure's 10 s or 1 s window, nested in the minute; `'bucket'`: a bucket
 * upstream's shorter interval; `'none'`), a PTU's utilization, Claude's expected output, and
 * which token buckets ramp (one {@link Ramp} for all of them, so an idle spell is the model's).
 */
interface CounterPlan {
  tokens: Meter;
  requests: Meter;
  io: Meter;
  short: 'window' | 'bucket' | 'none';
  utilization?: boolean;
  expectedOutput?: boolean;
  ramp?: { plan: RampPlan; limits: ReadonlyArray<'tokens' | 'input' | 'output'> };
}

/**
 * The counters `plan` describes, over the limits of `build`.
 *
 * @example
 * ```ts
 * const counters = buildCounters(build, { tokens: 'bucket', requests: 'bucket', io: 'window', short: 'bucket' });
 * ```
 */
export function buildCounters(build: CounterBuild, plan: CounterPlan): LedgerCounters {
  const { limits, clock, scope } = build;
  const meter = (kind: Meter, limit: QuotaLimit, requests = false): UsageCount =>
    kind === 'bucket' ? new DrainCount(() => limit.value, clock) : new WindowCount(clock, requests);
  const tokensCount = meter(plan.tokens, limits.tpm);
  const requestsCount = meter(plan.requests, limits.rpm, true);
  const tokens = new TokensCounter(limits.tpm, tokensCount, scope);
  const requests = new RequestsCounter(limits.rpm, requestsCount, scope);
  let burst: BurstCounter | ShortBucketCounter;
  if (plan.short === 'bucket') {
    // A model that ramps its tokens after an idle spell ramps its requests after it too.
    const idleMs = plan.ramp !== undefined && build.ramp ? plan.ramp.plan.idleMs : Infinity;
    burst = new ShortBucketCounter(limits.rpm, clock, idleMs);
  } else {
    // Azure's 10 s windows nest in its minute: the burst counter reads the newest sixth of the
    // requests' own window. Without one (a PTU), it reads a window that never slides: inactive.
    const window =
      plan.short === 'window' && requestsCount instanceof WindowCount
        ? requestsCount
        : new WindowCount(clock, true);
    burst = new BurstCounter(limits.rpm, window, scope, requests.order);
  }
  const expected = plan.expectedOutput === true ? new OutputEstimate() : undefined;
  const input = new InputCounter(limits.itpm, meter(plan.io, limits.itpm), scope);
  const output = new OutputCounter(limits.otpm, meter(plan.io, limits.otpm), scope, expected);
  if (plan.ramp !== undefined && build.ramp) {
    const ramp = new Ramp(plan.ramp.plan);
    const ramped = { tokens, input, output };
    // Only a bucket ramps: a window's count is forgotten whole when it ends, never drained.
    for (const name of plan.ramp.limits) {
      if (ramped[name].window.drains === true) ramped[name].ramp = ramp;
    }
  }
  return {
    tokens,
    requests,
    burst,
    input,
    output,
    utilization:
      plan.utilization === true
        ? new UtilizationCounter(tokens, build.outputWeight ?? 1)
        : undefined,
    expected,
  };
}

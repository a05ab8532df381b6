import type { TokenUsage as Usage } from '../quota/admission';
import type { Deployment } from '../registry/deployment';
import type { ModelState } from '../registry/model-state';
import type { AttemptTrace } from '../telemetry/gen-ai-telemetry';
import type { Provider } from '../types';
import type { AttemptHooks, PreparedRequest } from './attempt-types';

/**
 * The most tokens one field of an answer's usage may hold: above every model's context window
 * and output, far below where a count stops being exact.
 */
const MAX_USAGE_TOKENS = 10_000_000;

/**
 * What is wrong with the usage an answer reported, or `undefined` when it can be so: every field
 * a whole number of tokens from 0 to {@link MAX_USAGE_TOKENS}, and on OpenAI's APIs the cached
 * tokens within the prompt they are part of (Claude reports cache reads beside its input).
 * Usage that cannot be is the deployment's fault: the attempt is charged its reservation, and
 * nothing is refunded on its word.
 *
 * @example
 * ```ts
 * usageFault({ input: 10, output: 1e300 }, 'openai'); // 'output is 1e+300'
 * usageFault({ input: 10, output: 5, cacheRead: 20 }, 'openai'); // 'cached tokens 20 above the prompt 10'
 * ```
 */
function usageFault(usage: Usage, provider: Provider): string | undefined {
  // Each field by name: a loop over their names read them by a key that changes, a slow lookup
  // on every answer.
  const bad =
    badCount('input', usage.input) ??
    badCount('output', usage.output) ??
    badCount('cacheRead', usage.cacheRead) ??
    badCount('cacheWrite', usage.cacheWrite);
  if (bad !== undefined) return bad;
  if (provider === 'openai' && (usage.cacheRead ?? 0) > usage.input) {
    return `cached tokens ${usage.cacheRead} above the prompt ${usage.input}`;
  }
  return undefined;
}

/** What is wrong with one field's count (absent is fine), or `undefined`. */
function badCount(field: keyof Usage, value: number | undefined): string | undefined {
  if (value === undefined) return undefined;
  return Number.isInteger(value) && value >= 0 && value <= MAX_USAGE_TOKENS
    ? undefined
    : `${field} is ${String(value)}`;
}

/**
 * `usage` as an attempt's accounting takes it: as reported when it can be so; else one log line
 * names the deployment (the `faultyUsage` hook) and `undefined` stands for it, so the attempt is
 * charged its reservation.
 *
 * @example
 * ```ts
 * state.answered(request.admission, checkedUsage(attempt, adapter.usage(data)), startedAt);
 * ```
 */
export function checkedUsage(
  attempt: {
    readonly deployment: { readonly provider: Provider };
    readonly modelState: ModelState;
    readonly hooks: Pick<AttemptHooks, 'faultyUsage'>;
  },
  usage: Usage | undefined,
): Usage | undefined {
  if (usage === undefined) return undefined;
  const fault = usageFault(usage, attempt.deployment.provider);
  if (fault === undefined) return usage;
  attempt.hooks.faultyUsage?.(attempt.modelState, fault);
  return undefined;
}

/**
 * The call's account (with `tenants` or `pricing`) takes the usage an attempt produced (as
 * {@link checkedUsage} gave it); the attempt's span, the cost.
 *
 * @example
 * ```ts
 * if (request.account !== undefined) costUsage(attempt, checkedUsage(attempt, usage));
 * ```
 */
export function costUsage(
  attempt: {
    readonly deployment: Deployment;
    readonly modelState: ModelState;
    readonly request: PreparedRequest;
    readonly trace: AttemptTrace | undefined;
  },
  usage: Usage | undefined,
): void {
  const { account, admission } = attempt.request;
  const usd = account!.settled(attempt.deployment, attempt.modelState, admission, usage);
  if (usd !== undefined) attempt.trace?.cost(usd);
}

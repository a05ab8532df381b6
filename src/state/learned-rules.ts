import type { DeploymentRegistry } from '../registry/deployment-registry';
import type { ModelState } from '../registry/model-state';
import type { LearnedRule } from '../quota/rules/quota-rules';
import { clip } from '../errors/clip';
import type { SwitchboardLogger } from '../types';
import type { SharedValues } from './state-store';

/** The shared value that holds every learned rule: `[deployment, model, rule]` triples. */
const KEY = 'learned-rules';
/** How long the value lives after its last write (ms): a day, renewed by every learning. */
const TTL_MS = 86_400_000;
/** The longest value read (characters) and the most triples taken from it. */
const MAX_LENGTH = 1_048_576;
const MAX_RULES = 4_096;
const RULES: ReadonlySet<string> = new Set<LearnedRule>([
  'request-window-1s',
  'request-window-10s',
]);

/** What {@link shareLearnedRules} returns: a read now, and a stop. */
export interface LearnedRulesSharing {
  /** Reads what the other replicas learned, and counts by it. */
  poll(): Promise<void>;
  close(): void;
}

/**
 * Shares the rules the upstreams taught (a per-minute request limit enforced per second) through
 * a shared store: what one replica learns from a 429 it writes under `learned-rules`, and every
 * `everyMs` each replica reads what the others learned and counts by it too (one log line per
 * model). What is read was written by anyone with access to the store: a value that is not a
 * list of `[deployment, model, rule]` with a known rule is skipped, logged once.
 *
 * @example
 * ```ts
 * const sharing = shareLearnedRules(store.sharedValues(), registry, { clock, logger });
 * await sharing.poll();
 * sharing.close();
 * ```
 */
export function shareLearnedRules(
  values: SharedValues,
  registry: DeploymentRegistry,
  options: { clock: () => number; logger?: SwitchboardLogger; everyMs?: number },
): LearnedRulesSharing {
  const known = new Map<string, [string, string, LearnedRule]>();
  const idOf = (deployment: string, model: string) => JSON.stringify([deployment, model]);
  let closed = false;
  let writing = Promise.resolve();
  const publish = (): void => {
    // One read and one write: a replica learning at the same moment may be lost, and its next
    // refusal writes it again.
    writing = writing.then(async () => {
      const stored = parse(await values.get(KEY), values);
      for (const [deployment, model, rule] of stored) {
        if (!known.has(idOf(deployment, model)))
          known.set(idOf(deployment, model), [deployment, model, rule]);
      }
      if (!closed) values.set(KEY, JSON.stringify([...known.values()]), TTL_MS);
    });
  };
  const stop = registry.onRuleLearned((state, rule) => {
    known.set(idOf(state.deployment, state.name), [state.deployment, state.name, rule]);
    publish();
  });
  const adopt = (state: ModelState, rule: LearnedRule): void => {
    if (!state.quota.rules.adopt(state.quota, rule, options.clock())) return;
    options.logger?.warn(
      `${state.deployment}/${state.name}: another replica learned the upstream's stricter rule; counting by it here too (${rule})`,
    );
  };
  const poll = async (): Promise<void> => {
    for (const [deployment, model, rule] of parse(await values.get(KEY), values)) {
      const state = registry.deployments.get(deployment)?.models.get(model);
      if (state === undefined || closed) continue;
      known.set(idOf(deployment, model), [deployment, model, rule]);
      adopt(state, rule);
    }
  };
  const timer = setInterval(() => void poll(), options.everyMs ?? 1_000);
  timer.unref();
  return {
    poll,
    close() {
      closed = true;
      clearInterval(timer);
      stop();
    },
  };
}

/** The triples of a stored value, each checked; what is not one is skipped, logged once. */
function parse(text: string | undefined, values: SharedValues): [string, string, LearnedRule][] {
  if (text === undefined) return [];
  let list: unknown;
  try {
    list = text.length > MAX_LENGTH ? undefined : JSON.parse(text);
  } catch {
    list = undefined;
  }
  if (!Array.isArray(list)) {
    values.skipped(`'${KEY}': ${clip(text)} is not a list of [deployment, model, rule]`);
    return [];
  }
  const rules: [string, string, LearnedRule][] = [];
  for (const entry of list.slice(0, MAX_RULES)) {
    const [deployment, model, rule] = Array.isArray(entry) ? (entry as unknown[]) : [];
    if (typeof deployment === 'string' && typeof model === 'string' && RULES.has(rule as string)) {
      rules.push([deployment, model, rule as LearnedRule]);
    } else {
      values.skipped(
        `a '${KEY}' entry: ${clip(JSON.stringify(entry) ?? String(entry))} is not [deployment, model, rule]`,
      );
    }
  }
  return rules;
}

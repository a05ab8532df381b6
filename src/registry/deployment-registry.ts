import type { DeploymentConfig, SwitchboardLogger } from '../types';
import { hotRows } from '../quota/hot-row';
import { PoolLevels, type PoolLimits } from '../quota/pool-level';
import type { LimitName } from '../quota/quota-limit';
import { clip } from '../errors/clip';
import { carries, type TagSet } from '../placement/tags';
import { plainHttpWarning } from './plain-http';
import type { LearnedRule } from '../quota/rules/quota-rules';
import { rulesFor } from '../quota/rules/rules-for';
import { upstreamKind } from '../quota/upstream-kind';
import { SwitchboardError } from '../switchboard.error';
import type { Deployment, DeploymentBuilder, DeploymentBuilders, Provider } from './deployment';
import type { ModelEvent } from './model-event';
import { ModelState } from './model-state';
import type { LatencySnapshot } from './latency';
import { tiersOf } from './tiers';
import { isUnreachable, UnreachableDeployments } from './unreachable';

/**
 * `stats()` entry: utilization rounded to 3 places (by the anchored view), usage as
 * `"used/limit"` (our own count), and where they apply the input / output limits, the limits
 * learned from the upstream's headers, and what its last answer said was left.
 */
export interface ModelStats {
  util: number;
  tpm: string;
  rpm: string;
  itpm?: string;
  otpm?: string;
  /** Limits taken from the upstream's headers rather than the configuration. */
  learned?: LimitName[];
  /** What the upstream's last rate-limit headers said was left, per limit. */
  upstreamRemaining?: Partial<Record<LimitName, number>>;
  /**
   * Why the model is avoided on this deployment now: `unauthorized (401)`, `not deployed`,
   * `quota exhausted until <ISO time>`, `rate_limit`, ...
   */
  cooling?: string;
  /** Calls in flight now over the `maxInFlight` cap (`"used/cap"`, 0 = no cap); once either is set. */
  inFlight?: string;
  /** Recent latency, once measured: time to first token of streams, per output token otherwise. */
  latency?: LatencySnapshot;
  /** The deployment's tags, when it has any: calls that require tags go only where they are all. */
  tags?: readonly string[];
}

/** Listens to mark-downs and mark-ups of every model. */
export type ModelListener = (state: ModelState, event: ModelEvent) => void;

/**
 * Which deployment each session was last sent to: a bounded map from session id to deployment
 * name, where reading a session keeps it (the selection's `SessionAffinity` is one). Picking a
 * deployment reads and writes it; a shared store fills it from other instances.
 *
 * @example
 * ```ts
 * registry.sessions.get('user-42'); // 'east'
 * `${registry.sessions.size} of ${registry.sessions.capacity} sessions held`;
 * ```
 */
export interface Sessions {
  /** The most sessions held; past it the least recently used is forgotten. */
  readonly capacity: number;
  readonly size: number;
  /** The deployment of a session (which makes it the most recent), if held. */
  get(sessionId: string): string | undefined;
  set(sessionId: string, deployment: string): void;
  delete(sessionId: string): boolean;
  /** Every session and its deployment, the least recent first. */
  entries(): IterableIterator<[string, string]>;
}

/** What a registry is built with. */
interface RegistryContext {
  /** Builds each provider's deployments (the switchboard hands in its providers' kits). */
  builders: DeploymentBuilders;
  /** Where the sessions are kept (the switchboard's `SessionAffinity`, of `maxSessions`). */
  sessions: Sessions;
  clock?: () => number;
  logger?: SwitchboardLogger;
  /** The longest cooldown of any model (ms). */
  maxCooldown?: number;
  /** Limits of the levels of quota pool paths (`SwitchboardOptions.quotaPools`). */
  quotaPools?: Readonly<Record<string, PoolLimits>>;
}

/** Pools kept per model and set of tags; past it they are forgotten and made again when asked. */
const MAX_TAGGED_POOLS = 1024;

/** A model's deployments that carry a set of tags, and their tiers. */
interface TaggedPool {
  pool: readonly Deployment[];
  tiers: readonly (readonly Deployment[])[] | undefined;
}

const NO_POOL: TaggedPool = Object.freeze({ pool: Object.freeze([]), tiers: undefined });

/**
 * The deployments of one switchboard, indexed by model (pools, tiers, tags), with the session
 * map; answers which deployments serve a call (choosing among them is the selection's).
 * Injectable in Nest.
 *
 * @example
 * ```ts
 * constructor(private readonly registry: DeploymentRegistry) {}
 * ...
 * this.registry.poolFor('gpt-4o-mini').map((d) => d.name); // ['east', 'west']
 * ```
 */
export class DeploymentRegistry {
  /** By name, in configuration order. */
  readonly deployments: ReadonlyMap<string, Deployment>;
  /** Every deployment that serves a model, by model name. */
  readonly pools: ReadonlyMap<string, readonly Deployment[]>;
  /** Models whose deployments have more than one `priority`: their tiers, most preferred first. */
  readonly tiers: ReadonlyMap<string, readonly (readonly Deployment[])[]>;
  /** Session id -> deployment name. */
  readonly sessions: Sessions;
  private readonly providers = new Map<string, Provider>();
  /**
   * `model` + NUL + tag key -> the model's deployments carrying every tag: made once per set of
   * tags asked for, and the same array every time, so a selector keeps what it draws from it.
   */
  private readonly tagged = new Map<string, TaggedPool>();
  /** Every tag some deployment carries. */
  readonly knownTags: ReadonlySet<string>;
  /** @internal Deployments that refused connections and have not answered since. */
  readonly unreachable = new UnreachableDeployments((model, tags) => this.poolFor(model, tags));
  private readonly listeners: ModelListener[] = [];
  private readonly ruleListeners: ((state: ModelState, rule: LearnedRule) => void)[] = [];
  /** Learned or corrected limits already logged. */
  private readonly loggedLimits = new Set<string>();
  private readonly clock: () => number;
  private readonly logger: SwitchboardLogger | undefined;
  /** While a deployment's other models are being cooled with one of them. */
  private coolingDeployment = false;

  constructor(configs: readonly DeploymentConfig[], context: RegistryContext) {
    this.clock = context.clock ?? Date.now;
    this.logger = context.logger;
    this.sessions = context.sessions;
    const deployments = new Map<string, Deployment>();
    const pools = new Map<string, Deployment[]>();
    const onEvent = (state: ModelState, event: ModelEvent) => this.emit(state, event);
    // A quota pool's first member builds its ledger; the others count their calls there.
    const firstMembers = new Map<string, ModelState>();
    const levels = new PoolLevels(context.quotaPools, this.clock);
    // One table for every model's hot row, held by nothing but those rows: it goes with them.
    const rows = hotRows(configs.reduce((n, c) => n + c.models.length, 0));
    let next = 0;
    configs.forEach((config, i) => {
      const models = new Map<string, ModelState>();
      for (const m of config.models) {
        // A model entry's own priority, weight and cap win over its deployment's.
        const routing = {
          priority: m.priority ?? config.priority,
          weight: m.weight ?? config.weight,
          maxInFlight: m.maxInFlight ?? config.maxInFlight,
        };
        const rules = rulesFor(
          upstreamKind(config.provider, config.baseURL),
          m.provisioned === true,
        );
        const state = new ModelState({ ...m, ...routing }, config.name, this.clock, {
          rules,
          levels: levels.of(m.quotaPool, rules),
          maxCooldown: context.maxCooldown,
          ledger: m.quotaPool === undefined ? undefined : firstMembers.get(m.quotaPool)?.quota,
          hot: rows[next++],
        });
        if (m.quotaPool !== undefined && !firstMembers.has(m.quotaPool)) {
          firstMembers.set(m.quotaPool, state);
        }
        state.listener = onEvent;
        // No one listens yet: a charge's `spend` event would reach nobody.
        state.spendHeard = false;
        models.set(m.name, state);
      }
      const deployment = build(context.builders[config.provider], config, models, i);
      const insecure = plainHttpWarning(config.name, config.baseURL);
      if (insecure) this.logger?.warn(insecure);
      deployments.set(config.name, deployment);
      for (const name of models.keys()) {
        const pool = pools.get(name) ?? [];
        pool.push(deployment);
        pools.set(name, pool);
        this.providers.set(name, config.provider);
      }
    });
    this.deployments = deployments;
    this.pools = pools;
    const tiers = new Map<string, readonly (readonly Deployment[])[]>();
    for (const [model, pool] of pools) {
      const t = tiersOf(model, pool);
      if (t !== undefined) tiers.set(model, t);
    }
    this.tiers = tiers;
    this.knownTags = new Set([...deployments.values()].flatMap((d) => d.tags));
  }

  /** Models by name with the provider that serves them. */
  get models(): ReadonlyMap<string, Provider> {
    return this.providers;
  }

  /** Listen to mark-downs and mark-ups; returns a function that stops listening. */
  onModelEvent(listener: ModelListener): () => void {
    this.listeners.push(listener);
    this.hearSpends();
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
      this.hearSpends();
    };
  }

  /**
   * Listen to the rules the upstreams taught (a shorter request interval), once per model and
   * rule, without asking for the other events; returns a function that stops listening.
   */
  onRuleLearned(listener: (state: ModelState, rule: LearnedRule) => void): () => void {
    this.ruleListeners.push(listener);
    return () => {
      const i = this.ruleListeners.indexOf(listener);
      if (i >= 0) this.ruleListeners.splice(i, 1);
    };
  }

  /** `spend` events are made only while someone listens (one per charge otherwise wasted). */
  private hearSpends(): void {
    const heard = this.listeners.length > 0;
    for (const d of this.deployments.values())
      for (const s of d.models.values()) s.spendHeard = heard;
  }

  /**
   * The deployments serving `model` through `api`, or a {@link SwitchboardError} that says why
   * there are none.
   */
  poolFor(model: unknown, tags?: TagSet): readonly Deployment[] {
    if (tags !== undefined) return this.taggedPool(model, tags).pool;
    if (typeof model !== 'string' || model === '') {
      throw new SwitchboardError('model is required: pass the model name as `model`');
    }
    const pool = this.pools.get(model);
    if (pool === undefined) {
      const known = [...this.pools.keys()].join(', ');
      throw new SwitchboardError(
        `No deployments available for ${clip(model)} (configured models: ${known})`,
        { code: 'model_not_found' },
      );
    }
    return pool;
  }

  /**
   * The tiers of `model`'s deployments (carrying every one of `tags`, when given), most preferred
   * first; `undefined` when they share one priority.
   */
  tiersFor(model: string, tags?: TagSet): readonly (readonly Deployment[])[] | undefined {
    return tags === undefined ? this.tiers.get(model) : this.taggedPool(model, tags).tiers;
  }

  private taggedPool(model: unknown, tags: TagSet): TaggedPool {
    const all = this.poolFor(model);
    const key = `${model as string}\0${tags.key}`;
    let found = this.tagged.get(key);
    if (found === undefined) {
      // A tag no deployment carries leaves no deployment for any model: nothing to keep.
      if (!tags.tags.every((t) => this.knownTags.has(t))) return NO_POOL;
      const pool = all.filter((d) => carries(d, tags));
      found = { pool, tiers: pool.length > 0 ? tiersOf(model as string, pool) : undefined };
      if (this.tagged.size >= MAX_TAGGED_POOLS) this.tagged.clear();
      this.tagged.set(key, found);
    }
    return found;
  }

  /** Forget usage on every deployment. */
  resetUsage(): void {
    for (const d of this.deployments.values()) for (const m of d.models.values()) m.resetUsage();
  }

  /** Per deployment, per model: `{ util, tpm: "used/limit", rpm: "used/limit" }`. */
  stats(): Record<string, Record<string, ModelStats>> {
    const out: Record<string, Record<string, ModelStats>> = {};
    for (const [name, d] of this.deployments) {
      const models: Record<string, ModelStats> = {};
      for (const [model, s] of d.models) {
        const { tpm, rpm, itpm, otpm } = s.quota.limits;
        const entry: ModelStats = {
          util: Math.round(s.util * 1000) / 1000,
          tpm: `${Math.round(s.tpmUsage)}/${tpm.value}`,
          rpm: `${Math.round(s.rpmUsage)}/${rpm.value}`,
        };
        const io = itpm.value > 0 || otpm.value > 0 ? s.quota.ioUsage() : undefined;
        if (io && itpm.value > 0) entry.itpm = `${Math.round(io.input)}/${itpm.value}`;
        if (io && otpm.value > 0) entry.otpm = `${Math.round(io.output)}/${otpm.value}`;
        const learned = Object.values(s.quota.limits)
          .filter((l) => l.learned)
          .map((l) => l.name);
        if (learned.length > 0) entry.learned = learned;
        const reported = Object.entries(s.quota.upstreamRemaining);
        if (reported.length > 0) {
          entry.upstreamRemaining = Object.fromEntries(reported.map(([k, v]) => [k, v.remaining]));
        }
        const why = s.downReason;
        if (why !== undefined) entry.cooling = why;
        const { count, cap } = s.inFlight;
        if (count > 0 || cap > 0) entry.inFlight = `${count}/${cap}`;
        const latency = s.latency.snapshot();
        if (latency.firstTokenMs !== undefined || latency.perTokenMs !== undefined) {
          entry.latency = latency;
        }
        if (d.tags.length > 0) entry.tags = d.tags;
        models[model] = entry;
      }
      out[name] = models;
    }
    return out;
  }

  /**
   * A deployment that cannot be reached cannot be for any model: its other models cool with the
   * one that found out (their own mark-downs, heard meanwhile, cool nothing more).
   */
  private coolDeployment(state: ModelState, ms: number, reason: string): void {
    if (this.coolingDeployment) return;
    this.coolingDeployment = true;
    try {
      for (const other of this.deployments.get(state.deployment)?.models.values() ?? []) {
        if (other !== state) other.markDown(ms, reason);
      }
    } finally {
      this.coolingDeployment = false;
    }
  }

  private emit(state: ModelState, event: ModelEvent): void {
    if (event.type === 'down') {
      const ms = Math.max(0, event.until - this.clock());
      // Calls sent before the first refusal came back are refused too: one line says it.
      if (this.unreachable.markedDown(state, event.reason)) {
        this.logger?.warn(
          `${state.deployment}/${state.name} marked down for ${Math.round(ms)} ms${event.reason ? ` (${event.reason})` : ''}`,
        );
      }
      if (isUnreachable(event.reason)) this.coolDeployment(state, ms, event.reason!);
    } else if (event.type === 'up') {
      this.logger?.log(`${state.deployment}/${state.name} marked up`);
      this.unreachable.markedUp(state);
    } else if (event.type === 'rule') {
      const key = `${state.deployment}/${state.name}/${event.rule}`;
      if (!this.loggedLimits.has(key)) {
        this.loggedLimits.add(key);
        this.logger?.warn(
          `${state.deployment}/${state.name}: the upstream refused a call our count had room for; ` +
            `counting by its stricter rule from now on (${event.rule})`,
        );
        for (const listener of this.ruleListeners) listener(state, event.rule);
      }
    } else if (event.type === 'limit') {
      const key = `${state.deployment}/${state.name}/${event.limit}`;
      // Once each: the upstream repeats its limits on every answer.
      if (!this.loggedLimits.has(key)) {
        this.loggedLimits.add(key);
        if (event.configured) {
          this.logger?.warn(
            `${state.deployment}/${state.name}: configured ${event.limit} ${event.was} disagrees with the upstream's ${event.value}; using ${event.value}`,
          );
        } else {
          this.logger?.log(
            `${state.deployment}/${state.name}: ${event.limit} ${event.value} learned from the upstream's headers`,
          );
        }
      }
    }
    for (const listener of this.listeners) listener(state, event);
  }
}

function build(
  builder: DeploymentBuilder,
  config: DeploymentConfig,
  models: Map<string, ModelState>,
  index: number,
): Deployment {
  try {
    return builder.deployment(config, models);
  } catch (err) {
    // The SDK constructors throw on missing credentials; their message names environment
    // variables, ours names the field.
    const reason = err instanceof Error ? err.message : String(err);
    throw new SwitchboardError(
      `deployments[${index}] ('${config.name}') could not be set up: ${reason} Set deployments[${index}].apiKey.`,
      { cause: err, code: 'config' },
    );
  }
}

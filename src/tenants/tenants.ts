import { ownInput, ownOutput, tokensOf, type Admission, type TokenUsage } from '../quota/admission';
import type { RateLimitErrorClass } from '../quota/no-room';
import type { ModelState } from '../registry/model-state';
import { sessionKey } from '../selection/session-affinity';
import { SwitchboardError } from '../switchboard.error';
import type { DeploymentConfig, Price } from '../types';
import type { TenantPolicy } from './tenant-options';
import { CallAccount } from './call-account';
import { maxOutputs, UNKNOWN_MAX_OUTPUT } from './max-output';
import { PriceTable } from './price';
import { placesOf, type TenantPlace } from './places';
import { CapacityQueue } from '../scheduling/capacity-queue';
import type { Turn } from '../scheduling/queue-view';
import { neverFits, overLimitError, TENANT_UNITS, type TenantRefusal } from './over-limit';
import { tenantOf } from '../scheduling/tenant-of';
import type {
  TenantCharge,
  TenantCounts,
  TenantLimits,
  TenantVerdict,
} from '../state/tenant-counts';

export type { TenantPlace } from './places';

/** How a call of a limited tenant waits for its room; absent: it fails at once. */
interface TenantWait {
  maxWait: number;
  maxQueued: number;
}

/** A tenant's policy as calls read it: its limits (none set: `undefined`) and its tags. */
interface Policy {
  limits: TenantLimits | undefined;
  tags: readonly string[] | undefined;
}

/** What the 429 of a call held back by its tenant's limit says. */
interface OverLimit {
  account: CallAccount;
  charges: readonly { charge: TenantCharge }[];
  RateLimitError: RateLimitErrorClass;
  joined: number;
}

/**
 * The tenants of a switchboard: their policies (`options.tenants`), the prices
 * (`options.pricing`), and the counts they are held to ({@link TenantCounts}: this process, or a
 * shared store). A call of a tenant with a policy takes its charge (prompt estimate + max_tokens,
 * one request, the USD that prices, at the dearest deployment of its model) before it is routed;
 * over a limit it fails at once with the SDK's `RateLimitError`, or waits in its tenant's line
 * (the one {@link CapacityQueue}, keyed by tenant), first come first served, until the room its
 * limit gives back. Over a budget, a fallback model
 * whose price fits takes the call, when `options.fallbacks` names one.
 *
 * @example
 * ```ts
 * const tenants = new Tenants(options, { counts: new LocalTenantCounts(), clock: Date.now });
 * const account = tenants.open('acme', 'gpt-4o')!;
 * const model = await tenants.admit(account, admission, ['gpt-4o', 'gpt-4o-mini'], OpenAI.RateLimitError);
 * ```
 */
export class Tenants {
  readonly prices: PriceTable;
  /** Per model, the most output an answer may run to (`maxOutput`, else documented). */
  private readonly maxOutput: ReadonlyMap<string, number>;
  /**
   * @internal Hears what each answer cost, per model and tenant as the cost metric counts it (the
   * switchboard's metrics): handed in by whoever reports costs, so the tenants do not import
   * them. An object with a method, not a closure, so one optimized path serves every switchboard.
   */
  costMetric: { cost(state: ModelState, costTenant: string, usd: number): void } | undefined =
    undefined;
  private readonly policies = new Map<string, Policy>();
  private readonly fallbackPolicy: Policy | undefined;
  /** Calls of limited tenants waiting for room, one line per tenant; none: each tries once. */
  private readonly lines: CapacityQueue | undefined;
  /** USD per tenant as the cost metric counts it (a named tenant, or `other`) since the start. */
  private readonly costByTenant = new Map<string, number>();
  private readonly counts: TenantCounts;
  private readonly clock: () => number;
  private readonly wait: TenantWait | undefined;
  private closed = false;

  constructor(
    options: {
      deployments: readonly DeploymentConfig[];
      tenants?: Readonly<Record<string, TenantPolicy>>;
      pricing?: Readonly<Record<string, Price>>;
    },
    context: { counts: TenantCounts; clock: () => number; wait?: TenantWait },
  ) {
    this.prices = new PriceTable(options.deployments, options.pricing);
    this.maxOutput = maxOutputs(options.deployments);
    this.counts = context.counts;
    this.clock = context.clock;
    this.wait = context.wait;
    const wait = context.wait;
    this.lines =
      wait !== undefined && wait.maxWait > 0
        ? new CapacityQueue({ ...wait, clock: context.clock })
        : undefined;
    let star: Policy | undefined;
    for (const [tenant, policy] of Object.entries(options.tenants ?? {})) {
      const limited =
        policy.tpm !== undefined ||
        policy.rpm !== undefined ||
        policy.tokensPerDay !== undefined ||
        policy.budget !== undefined;
      const read: Policy = {
        // A policy of tags alone counts nothing: its calls take no charge, in no store.
        limits: limited
          ? {
              tpm: policy.tpm,
              rpm: policy.rpm,
              tokensPerDay: policy.tokensPerDay,
              usd: policy.budget?.usd,
              period: policy.budget?.per,
            }
          : undefined,
        tags: policy.tags !== undefined && policy.tags.length > 0 ? policy.tags : undefined,
      };
      if (tenant === '*') star = read;
      else this.policies.set(tenant, read);
    }
    this.fallbackPolicy = star;
    if (!this.prices.empty) {
      for (const tenant of [...this.policies.keys(), 'other']) this.costByTenant.set(tenant, 0);
    }
  }

  /** The tenants named in the options (not `'*'`), as the cost metric labels them. */
  get named(): string[] {
    return [...this.policies.keys()];
  }

  /** True when neither tenants nor prices are configured: calls need no account. */
  get idle(): boolean {
    return this.policies.size === 0 && this.fallbackPolicy === undefined && this.prices.empty;
  }

  /**
   * The deployment tags every call of `tenant` requires (the policy of the tenant it belongs to,
   * else `'*'`'s), or `undefined` when that policy names none. A call without a tenant has no
   * policy.
   *
   * @example
   * ```ts
   * // tenants: { acme: { tags: ['eu'] } }
   * tenants.tagsOf('acme'); // ['eu']
   * tenants.tagsOf('acme/batch'); // ['eu']: a part of acme
   * ```
   */
  tagsOf(tenant: string | undefined): readonly string[] | undefined {
    return this.policyOf(tenant)?.tags;
  }

  /**
   * The account of a call of `tenant` (as the caller named it) to `model`: with the limits of the
   * tenant it belongs to ({@link tenantOf}: `acme/batch` is `acme`'s part, counted with it),
   * its policy's, else `'*'`'s; or without, when only its cost is counted.
   */
  open(named: string | undefined, model: string): CallAccount {
    const tenant = named === undefined ? undefined : tenantOf(named);
    const costTenant = tenant !== undefined && this.policies.has(tenant) ? tenant : 'other';
    const limits = this.policyOf(named)?.limits;
    if (limits === undefined) return new CallAccount(this, undefined, costTenant, {}, tenant ?? '');
    if (limits.usd !== undefined && !this.prices.charges(model)) {
      throw new SwitchboardError(
        `Tenant ${tenant} has a budget, but ${model} has no price: add it to options.pricing (USD per million tokens)`,
      );
    }
    return new CallAccount(this, sessionKey(tenant!), costTenant, limits, tenant!);
  }

  /**
   * Take the charge of `admission` for the account's tenant: for the call's model (the first of
   * `models`, then its fallbacks), at the dearest of the models it may still go to, else, over a
   * budget, at its own price with only the fallbacks that price covers; else the next model.
   * Gives where the call may go: at once when the tenant's counts answer at once and nobody
   * waits (over a limit, it throws the SDK's `RateLimitError`), else a promise of it (over a
   * limit, rejected with it at once or after waiting in the tenant's line).
   */
  admit(
    account: CallAccount,
    admission: Admission,
    models: readonly string[],
    RateLimitError: RateLimitErrorClass,
    signal?: AbortSignal | null,
  ): TenantPlace | Promise<TenantPlace> {
    const tokens = tokensOf(admission);
    const limits = account.limits;
    const never = neverFits(limits, tokens);
    if (never !== undefined) {
      const value = limits[never]!;
      return Promise.reject(
        new SwitchboardError(
          `A call of tenant ${account.tenant} can never fit its ${never} limit: it takes ${tokens} tokens at admission (${admission.input} input + ${admission.output} reserved output), above ${value} ${TENANT_UNITS[never]}. Shorten the prompt or lower its max_tokens.`,
        ),
      );
    }
    const charges = placesOf(models, limits.usd !== undefined, tokens, admission, this);
    if (this.closed) {
      return Promise.reject(new SwitchboardError('switchboard is closed', { code: 'unavailable' }));
    }
    const joined = this.clock();
    const key = account.tenantKey!;
    const lines = this.lines;
    if (lines === undefined && charges.length === 1) {
      // The common call (one place, nobody waits): one round trip to the counts; local counts
      // answer at once, and so does this (over a limit, by throwing).
      const v = this.counts.take(key, limits, charges[0]!.charge, joined);
      if (!(v instanceof Promise)) return this.tookOne(account, charges, RateLimitError, joined, v);
      return v.then((verdict) => this.tookOne(account, charges, RateLimitError, joined, verdict));
    }
    const w: OverLimit = { account, charges, RateLimitError, joined };
    const tryTurn = () => this.attempt(account, charges);
    if (lines === undefined) {
      // Nobody waits: the call takes its room or fails.
      return tryTurn().then((t) => {
        if ('target' in t) return t.target;
        throw this.overLimit(w, t);
      });
    }
    if (!lines.canJoin(key)) return Promise.reject(this.overLimit(w, undefined));
    return lines.wait(key, tryTurn, {
      signal,
      tags: { lane: 'interactive', tenant: key },
      onAbort: () => signal?.reason,
      onTimeout: (_waited, last) => this.overLimit(w, last),
    });
  }

  /** The verdict on a call's one place: the place, or (over a limit) the error thrown. */
  private tookOne(
    account: CallAccount,
    charges: readonly { place: TenantPlace; charge: TenantCharge }[],
    RateLimitError: RateLimitErrorClass,
    joined: number,
    v: TenantVerdict,
  ): TenantPlace {
    if (!v.ok) throw this.overLimit({ account, charges, RateLimitError, joined }, v);
    const { place, charge } = charges[0]!;
    account.took(charge, v.at);
    return place;
  }

  /**
   * USD spent per tenant since the start, as the cost metric labels them (a named tenant, or
   * `other`); empty without prices.
   *
   * @example
   * ```ts
   * tenants.costs(); // { acme: 0.0421, other: 0.0007 }
   * ```
   */
  costs(): Record<string, number> {
    return Object.fromEntries(this.costByTenant);
  }

  /** @internal What an answer of `state` cost, for `costTenant` (a named tenant, or `other`). */
  spent(state: ModelState, costTenant: string, usd: number): void {
    this.costByTenant.set(costTenant, (this.costByTenant.get(costTenant) ?? 0) + usd);
    this.costMetric?.cost(state, costTenant, usd);
  }

  /** @internal What an account adjusts; a refund wakes its tenant's line. */
  adjust(account: CallAccount, delta: TenantCharge): void {
    this.counts.adjust(account.tenantKey!, delta, account.at, account.limits);
    if (delta.tokens < 0 || delta.requests < 0 || delta.usd < 0)
      this.lines?.kick(account.tenantKey!);
  }

  /** @internal The price of `model` on `deployment`, if it has one. */
  priceOn(deployment: string, model: string): Price | undefined {
    return this.prices.on(deployment, model);
  }

  /**
   * @internal The most an attempt of `model` may be billed, in tokens: its prompt estimate and its
   * output cap, or, uncapped, the most the model may write.
   */
  reservation(model: string, admission: Admission): TokenUsage {
    const input = ownInput(admission);
    const n = admission.uncapped;
    if (n === undefined) return { input, output: ownOutput(admission) };
    return { input, output: n * (this.maxOutput.get(model) ?? UNKNOWN_MAX_OUTPUT) };
  }

  /** @internal USD reserved for an attempt that may go to any of `models`: the dearest. */
  reservedUsd(models: readonly string[], admission: Admission): number {
    let most = 0;
    for (const model of models) {
      const usd = this.prices.dearest(model, this.reservation(model, admission));
      if (usd > most) most = usd;
    }
    return most;
  }

  /** @internal Take `usd` more of an account's budget for its next attempt. */
  async topUp(
    account: CallAccount,
    usd: number,
    RateLimitError: RateLimitErrorClass,
  ): Promise<void> {
    const charge = { tokens: 0, requests: 0, usd };
    const v = await this.counts.take(account.tenantKey!, account.limits, charge, this.clock());
    if (!v.ok) {
      const w = { account, charges: [{ charge }], RateLimitError, joined: this.clock() };
      throw this.overLimit(w, v);
    }
    account.added(usd);
  }

  /** Fail everyone waiting and stop the timers. */
  close(error: () => unknown): void {
    this.closed = true;
    this.lines?.close(error);
  }

  /**
   * The policy of `tenant`: the one of the tenant it belongs to ({@link tenantOf}), else
   * `'*'`'s; none for a call without a tenant.
   */
  private policyOf(tenant: string | undefined): Policy | undefined {
    if (tenant === undefined) return undefined;
    return this.policies.get(tenantOf(tenant)) ?? this.fallbackPolicy;
  }

  /**
   * Take a call's charge for its model, or over the budget for a fallback whose price fits: the
   * first refused verdict when none can be taken.
   */
  private async attempt(
    account: CallAccount,
    charges: readonly { place: TenantPlace; charge: TenantCharge }[],
  ): Promise<Turn<TenantPlace, TenantRefusal>> {
    let first: TenantRefusal | undefined;
    for (const { place, charge } of charges) {
      const v = await this.counts.take(account.tenantKey!, account.limits, charge, this.clock());
      if (v.ok) {
        account.took(charge, v.at);
        return { target: place };
      }
      first ??= v;
      if (v.limit !== 'budget') break;
    }
    return first!;
  }

  /** The 429 of a call its tenant's limit holds back (`v`: its last refusal). */
  private overLimit(w: OverLimit, v: TenantRefusal | undefined): Error {
    const held = {
      tenant: w.account.tenant,
      charge: w.charges[0]!.charge,
      RateLimitError: w.RateLimitError,
      waited: this.clock() - w.joined,
      maxQueued: this.wait?.maxQueued ?? 0,
    };
    return overLimitError(held, v);
  }
}

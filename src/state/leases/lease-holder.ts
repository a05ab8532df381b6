import type { LimitCounter } from '../../quota/limit-counter';
import type { DeploymentRegistry } from '../../registry/deployment-registry';
import type { ModelState } from '../../registry/model-state';
import type { PoolLevel } from '../../quota/pool-level';
import type { LimitName, QuotaLimit } from '../../quota/quota-limit';
import type { SharedReading } from '../../quota/reading';
import type { UpstreamKind } from '../../quota/upstream-kind';
import type { MeterSpec } from './lease-meter';

/**
 * What a {@link LeaseBook} reads of the limits it leases, and where it puts its meters: a model's
 * ledger on a deployment (a `QuotaLedger`, a quota pool's included), or a level of a quota pool
 * path ({@link levelHolder}), whose meters gate every member's ledger.
 *
 * @example
 * ```ts
 * const holder: LeaseHolder = state.quota;
 * new LeaseBook(holder, [state], 'east:gpt-4o', context);
 * ```
 */
export interface LeaseHolder {
  readonly upstream: UpstreamKind;
  readonly limits: Readonly<Record<LimitName, QuotaLimit>>;
  /**
   * Azure's short request window, leased in the minute's place; `undefined` where the minute's
   * requests are leased (a level: no upstream enforces a short window of it that a header shows).
   */
  readonly burst: { readonly limit: number; readonly period: string | undefined } | undefined;
  /** Set on a provisioned deployment, which admits by utilization: nothing to lease. */
  readonly utilization: unknown;
  /** This replica's own tokens and requests counted at `now` (what it spent of its part). */
  localUsage(now: number): { tokens: number; requests: number };
  ioUsage(now: number): { input: number; output: number };
  /** The newest reading of the upstream's count of these limits (none for a level). */
  lastReading(): SharedReading | undefined;
  /** Add the meters as limits that gate every admission (they accumulate, never replace). */
  gate(meters: readonly LimitCounter[]): void;
  /** What its leases are counted under in `switchboard.leases`; default: its first model's. */
  readonly attributes?: Readonly<Record<string, string>>;
}

/**
 * A level of a quota pool path (`quotaPools`) as a lease holder: its configured limits, counted by
 * its members' upstream rules, with no reading (no header speaks of a level) and no short request
 * window; its meters gate the ledger of every member, whichever model or deployment it serves.
 *
 * @example
 * ```ts
 * new LeaseBook(levelHolder(org), members, '%level:org', context);
 * ```
 */
export function levelHolder(level: PoolLevel): LeaseHolder {
  return {
    upstream: level.upstream,
    limits: level.limits,
    burst: undefined,
    // A level is only its configured limits, over provisioned members too: always leased.
    utilization: undefined,
    localUsage: (now) => level.localUsage(now),
    ioUsage: (now) => level.ioUsage(now),
    lastReading: () => undefined,
    gate: (meters) => level.gate(meters),
    // Not its first member's model and deployment: the level's leases are every member's.
    attributes: { level: level.path },
  };
}

/**
 * The levels of quota pool paths that `registry`'s models draw on, each as a lease holder with every
 * model drawing on it (whose queue lines a lease wakes), keyed `%level:<path>` (URI-encoded: no
 * `<deployment>:<model>` field nor `%pool:` one can be it).
 *
 * @example
 * ```ts
 * levelHolders(registry); // [{ states: [a, b], field: '%level:org', holder }]
 * ```
 */
export function levelHolders(
  registry: Pick<DeploymentRegistry, 'deployments'>,
): { states: ModelState[]; field: string; holder: LeaseHolder }[] {
  const byLevel = new Map<PoolLevel, ModelState[]>();
  for (const deployment of registry.deployments.values()) {
    for (const state of deployment.models.values()) {
      for (const level of state.quota.levels) {
        const members = byLevel.get(level);
        if (members === undefined) byLevel.set(level, [state]);
        else members.push(state);
      }
    }
  }
  return [...byLevel].map(([level, members]) => ({
    states: members,
    field: `%level:${encodeURIComponent(level.path)}`,
    holder: levelHolder(level),
  }));
}

const MINUTE = 60_000;

/**
 * The limits a holder's upstream meters, as leases follow them: Azure OpenAI's tokens per fixed
 * minute and requests per short window (10 s or 1 s; a level's per minute); OpenAI's and
 * Anthropic's token buckets refilled over a minute. A provisioned deployment admits by
 * utilization: no lease.
 *
 * @example
 * ```ts
 * specsOf(state.quota).map((s) => s.meter); // ['tokens', 'requests']
 * ```
 */
export function specsOf(holder: LeaseHolder): MeterSpec[] {
  if (holder.utilization !== undefined) return [];
  const { limits, burst } = holder;
  if (holder.upstream === 'azure') {
    const tokens: MeterSpec = {
      meter: 'tokens',
      unit: 'tokens',
      kind: 'w',
      limit: () => limits.tpm.value,
      lengthMs: () => MINUTE,
    };
    if (burst === undefined) {
      return [
        tokens,
        { ...tokens, meter: 'requests', unit: 'requests', limit: () => limits.rpm.value },
      ];
    }
    return [
      tokens,
      {
        meter: 'requests',
        unit: 'requests',
        kind: 'w',
        // The short window's limit is at least 1 whenever rpm is known; without an rpm (none
        // configured, none learned yet) there is no request limit to lease.
        limit: () => (limits.rpm.value > 0 ? burst.limit : 0),
        lengthMs: () => (burst.period === '1s' ? 1_000 : 10_000),
      },
    ];
  }
  const bucket = (meter: MeterSpec['meter'], limit: () => number): MeterSpec => ({
    meter,
    unit: meter,
    kind: 'b',
    limit,
    lengthMs: () => MINUTE,
  });
  const specs = [
    bucket('tokens', () => limits.tpm.value),
    bucket('requests', () => limits.rpm.value),
  ];
  if (holder.upstream === 'anthropic') {
    specs.push(
      bucket('input', () => limits.itpm.value),
      bucket('output', () => limits.otpm.value),
    );
  }
  return specs;
}

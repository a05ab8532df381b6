import { Injectable } from '@nestjs/common';
import { Switchboard, type ModelStats } from 'nestjs-switchboard';
import type { Deployment, LatencySnapshot, LimitName } from 'nestjs-switchboard/extend';
import { Simulation } from '../simulation/simulation';
import { RATE_WINDOW_SECONDS, TrafficService } from './traffic.service';

/** Used and allowed per minute; `limit` 0 = unlimited. */
export interface Quota {
  /** As the upstream counts it: ours, corrected by its last rate-limit headers (what `util` uses). */
  used: number;
  limit: number;
  /** Our own count (this instance, plus the shared view). */
  ours: number;
  /** What the upstream's last answer said was left, if it said. */
  upstreamRemaining?: number;
  /** The limit came from the upstream's headers, not from the configuration. */
  learned: boolean;
  /**
   * What utilization takes from this limit: `used / limit` (0 without a limit); for requests the
   * larger of that and the share of the last 10 s (`recent`). The bar shows it.
   */
  share: number;
  /** Requests only, with a sliding window: those of the last sixth of it against `rpm / 6`. */
  recent?: { used: number; limit: number };
}

/** One model on one deployment. */
export interface ModelStatus {
  name: string;
  /** max(tpm share, rpm share), 1 while cooling; healthy below 1. */
  util: number;
  healthy: boolean;
  cooling: boolean;
  /** ms left of the cooldown, 0 when not cooling. */
  cooldownRemaining: number;
  /** Why it is cooling (`unauthorized (401)`, `not deployed`, `quota exhausted until …`), if known. */
  downReason?: string;
  tpm: Quota;
  rpm: Quota;
  /** Claude on Foundry: input and output tokens per minute, when limited apart. */
  itpm?: Quota;
  otpm?: Quota;
  /** Requests sent to it since the gateway started (failover attempts included). */
  requests: number;
  /** Its routing tier for this model (0 = most preferred) and its weight within the tier. */
  priority: number;
  weight: number;
  /** Calls in flight now, and the `maxInFlight` cap (0 = none). */
  inFlight: { count: number; cap: number };
  /**
   * Recent latency in ms, once measured: time to first token of streams, per output token of
   * the other answers (what latency-aware selection weighs).
   */
  latency: LatencySnapshot;
}

export interface DeploymentStatus {
  name: string;
  provider: 'openai' | 'anthropic';
  /** Its tags: calls that require tags go only where they all are. */
  tags: readonly string[];
  models: ModelStatus[];
  /** Sessions currently pinned to this deployment. */
  sessions: number;
}

export interface ModelSummary {
  name: string;
  provider: 'openai' | 'anthropic';
  /** Deployments that would take a call now. */
  healthy: number;
  total: number;
  requests: number;
  /** With priority tiers: per tier, most preferred first. */
  tiers?: Array<{ priority: number; healthy: number; total: number }>;
  /** Requests sent to deployments below the most preferred tier: the overflow. */
  spilled: number;
  /** Models its calls fall back to, in order. */
  fallbacks: string[];
  /** The fallback taking its calls now, when none of its own deployments is healthy. */
  fallbackInUse?: string;
  /** Calls waiting for room now (with `queue`). */
  queued: number;
  /** How long (ms) the longest-waiting of them has waited. */
  queueWaitMs: number;
  /** Calls that failed for their callers: 429s (held back for want of room, or upstream) and others. */
  failed: { rateLimited: number; other: number };
}

/** Calls waiting for room for one model, lane and tenant (with `queue`). */
export interface QueueLine {
  model: string;
  lane: 'interactive' | 'batch';
  /** The tenant's id (a hash for long ids), `(none)` for calls naming none, `(others)` past the first 20. */
  tenant: string;
  waiting: number;
}

/** What one tenant's calls cost since the gateway started. */
export interface TenantCost {
  /** A tenant named in `tenants`, or `other` for every call of a tenant not named (or of none). */
  tenant: string;
  /** USD, priced from the usage each answer reported. */
  usd: number;
}

/** Tenants listed apart per model and lane; the rest are summed as `(others)`. */
const TENANT_ROWS = 20;

/** What `GET /switchboard` answers. */
export interface SwitchboardStatus {
  /** The gateway routes to its built-in simulated deployments. */
  simulated: boolean;
  /** Server time (epoch ms) of this snapshot. */
  time: number;
  deployments: DeploymentStatus[];
  models: ModelSummary[];
  sessions: { held: number; max: number };
  requests: { total: number; perSecond: number; windowSeconds: number };
  /** `sb.stats()` as the library reports it. */
  stats: Record<string, Record<string, ModelStats>>;
  /** The queue per model, lane (interactive first) and tenant (most waiting first). */
  queue: QueueLine[];
  /** With `pricing`: USD spent per tenant (`sb.costs()`), the largest first; empty without. */
  costs: TenantCost[];
}

/** Builds the `/switchboard` snapshot from the switchboard's live state. */
@Injectable()
export class StatusService {
  constructor(
    private readonly sb: Switchboard,
    private readonly traffic: TrafficService,
    private readonly simulation: Simulation,
  ) {}

  snapshot(): SwitchboardStatus {
    const registry = this.sb.registry;
    const pinned = new Map<string, number>();
    for (const [, deployment] of registry.sessions.entries()) {
      pinned.set(deployment, (pinned.get(deployment) ?? 0) + 1);
    }
    const deployments: DeploymentStatus[] = [...this.sb.deployments.values()].map((d) => ({
      name: d.name,
      provider: d.provider,
      tags: d.tags,
      sessions: pinned.get(d.name) ?? 0,
      models: [...d.models.values()].map((m) => {
        const anchored = m.quotaView.anchoredUsage();
        const shares = m.quotaView.shares();
        const recent = m.quotaView.recent();
        const io = m.quotaView.ioUsage();
        const quota = (limit: LimitName, ours: number): Quota => ({
          used: Math.round(anchored[limit]),
          limit: m.quotaView.limits[limit].value,
          ours: Math.round(ours),
          upstreamRemaining: m.quotaView.upstreamRemaining[limit]?.remaining,
          learned: m.quotaView.limits[limit].learned,
          share: round(shares[limit]),
          ...(limit === 'rpm' && recent !== undefined
            ? { recent: { used: Math.round(Math.max(0, recent.used)), limit: recent.limit } }
            : {}),
        });
        return {
          name: m.name,
          util: round(m.util),
          healthy: m.isHealthy(),
          cooling: m.isCooling(),
          cooldownRemaining: Math.ceil(m.cooldownRemaining),
          ...(m.downReason !== undefined ? { downReason: m.downReason } : {}),
          tpm: quota('tpm', m.tpmUsage),
          rpm: quota('rpm', m.rpmUsage),
          ...(m.quotaView.limits.itpm.value > 0 ? { itpm: quota('itpm', io.input) } : {}),
          ...(m.quotaView.limits.otpm.value > 0 ? { otpm: quota('otpm', io.output) } : {}),
          requests: this.traffic.requests(d.name, m.name),
          priority: m.priority,
          weight: m.weight,
          inFlight: { count: m.inFlightView.count, cap: m.inFlightView.cap },
          latency: m.latencyView.snapshot(),
        };
      }),
    }));
    const failures = this.sb.failures();
    const healthyIn = (model: string, list: readonly Deployment[]) =>
      list.filter((d) => d.models.get(model)!.isHealthy()).length;
    const models: ModelSummary[] = [...registry.pools].map(([name, pool]) => {
      const tiers = registry.tiers.get(name);
      const fallbacks = [...(this.sb.fallbacks.get(name) ?? [])];
      const healthy = healthyIn(name, pool);
      const summary: ModelSummary = {
        name,
        provider: pool[0]!.provider,
        healthy,
        total: pool.length,
        requests: pool.reduce((sum, d) => sum + this.traffic.requests(d.name, name), 0),
        spilled: (tiers ?? [])
          .slice(1)
          .flat()
          .reduce((sum, d) => sum + this.traffic.requests(d.name, name), 0),
        fallbacks,
        queued: this.sb.queue?.length(name) ?? 0,
        queueWaitMs: this.sb.queue?.longestWait(name) ?? 0,
        failed: failures[name] ?? { rateLimited: 0, other: 0 },
      };
      if (tiers !== undefined) {
        summary.tiers = tiers.map((tier) => ({
          priority: tier[0]!.models.get(name)!.priority,
          healthy: healthyIn(name, tier),
          total: tier.length,
        }));
      }
      if (healthy === 0) {
        summary.fallbackInUse = fallbacks.find(
          (f) => healthyIn(f, registry.pools.get(f) ?? []) > 0,
        );
      }
      return summary;
    });
    return {
      simulated: this.simulation.enabled,
      time: Date.now(),
      deployments,
      models,
      sessions: { held: registry.sessions.size, max: registry.sessions.capacity },
      requests: {
        total: this.traffic.total,
        perSecond: this.traffic.perSecond(),
        windowSeconds: RATE_WINDOW_SECONDS,
      },
      stats: this.sb.stats(),
      queue: this.queueLines(),
      costs: Object.entries(this.sb.costs())
        .map(([tenant, usd]) => ({ tenant, usd }))
        .sort((a, b) => b.usd - a.usd || a.tenant.localeCompare(b.tenant)),
    };
  }

  private queueLines(): QueueLine[] {
    const queue = this.sb.queue;
    if (queue === undefined) return [];
    const lines: QueueLine[] = [];
    for (const model of queue.models()) {
      const waiting = queue.waiting(model);
      for (const lane of ['interactive', 'batch'] as const) {
        const tenants = [...(waiting[lane] ?? [])].sort((a, b) => b[1] - a[1]);
        for (const [tenant, n] of tenants.slice(0, TENANT_ROWS)) {
          lines.push({ model, lane, tenant: tenant === '' ? '(none)' : tenant, waiting: n });
        }
        const rest = tenants.slice(TENANT_ROWS).reduce((sum, [, n]) => sum + n, 0);
        if (rest > 0) lines.push({ model, lane, tenant: '(others)', waiting: rest });
      }
    }
    return lines;
  }
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

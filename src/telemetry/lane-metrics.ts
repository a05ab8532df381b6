import type {
  Attributes,
  Counter,
  Meter,
  ObservableCallback,
  ObservableGauge,
} from '@opentelemetry/api';
import type { QueueView } from '../scheduling/queue-view';
import { LANES, type CallTags, type Lane } from '../scheduling/lanes';
import { MAX_TENANT_LABELS, SWITCHBOARD_METRICS as M } from './metric-names';

/** The label of calls that name no tenant. */
const NONE = 'none';
/** The label of tenants beyond the first {@link MAX_TENANT_LABELS}. */
const OTHER = 'other';

/**
 * The scheduler's instruments (with `queue`): calls admitted, queued, seconds waited and batch
 * calls held back for the headroom, per model, lane and tenant, and the calls waiting now. The
 * first {@link MAX_TENANT_LABELS} tenants seen get their own label, the rest share `other`: a
 * tenant is whatever a caller sends, and each label value is a series kept forever.
 *
 * @example
 * ```ts
 * const lanes = new LaneMetrics(meter, ['gpt-4o'], queue);
 * lanes.admitted('gpt-4o', { lane: 'batch', tenant: 'nightly' });
 * ```
 */
export class LaneMetrics {
  private readonly admittedCounter: Counter;
  private readonly queuedCounter: Counter;
  private readonly waitedCounter: Counter;
  private readonly heldBackCounter: Counter;
  private readonly waitingGauge: ObservableGauge;
  private readonly observe: ObservableCallback;
  /** Tenant keys with a label of their own, in the order seen. */
  private readonly named = new Set<string>();
  /** Some tenant was counted as `other`. */
  private others = false;
  /** Attributes per model, then per lane and tenant label, made once. */
  private readonly attributes = new Map<string, Map<string, Attributes>>();

  constructor(
    meter: Meter,
    private readonly models: Iterable<string>,
    queue: QueueView,
  ) {
    this.admittedCounter = meter.createCounter(M.LANE_ADMITTED, {
      description:
        'Calls let through to a deployment, at once or after waiting, per lane and tenant',
    });
    this.queuedCounter = meter.createCounter(M.LANE_QUEUED, {
      description: 'Calls that joined the queue to wait for room, per lane and tenant',
    });
    this.waitedCounter = meter.createCounter(M.LANE_WAITED, {
      description: 'Seconds waited in the queue by calls let through, per lane and tenant',
      unit: 's',
    });
    this.heldBackCounter = meter.createCounter(M.LANE_HELD_BACK, {
      description:
        'Batch calls that would have fit but were held back to leave headroom for interactive calls',
    });
    this.waitingGauge = meter.createObservableGauge(M.LANE_WAITING, {
      description: 'Calls waiting for room now, per lane and tenant',
    });
    this.observe = (result) => {
      for (const model of this.models) {
        const waiting = queue.waiting(model);
        for (const lane of LANES) {
          // Every label known is observed, at 0 when nobody waits under it.
          const byLabel = new Map<string, number>([[NONE, 0]]);
          for (const tenant of this.named) byLabel.set(tenant, 0);
          if (this.others) byLabel.set(OTHER, 0);
          for (const [tenant, n] of waiting[lane] ?? []) {
            const label = this.labelOf(tenant);
            byLabel.set(label, (byLabel.get(label) ?? 0) + n);
          }
          for (const [tenant, n] of byLabel) result.observe(n, { model, lane, tenant });
        }
      }
    };
    this.waitingGauge.addCallback(this.observe);
    for (const model of this.models) this.zero(model, NONE);
  }

  /** A call's first attempt was let through. */
  admitted(model: string, tags: CallTags): void {
    this.admittedCounter.add(1, this.attributesOf(model, tags));
  }

  /** A call joined the queue. */
  queued(model: string, tags: CallTags): void {
    this.queuedCounter.add(1, this.attributesOf(model, tags));
  }

  /** A call left the queue for a deployment after `ms`. */
  waited(model: string, tags: CallTags, ms: number): void {
    this.waitedCounter.add(ms / 1000, this.attributesOf(model, tags));
  }

  /** A batch call was held back for the headroom. */
  heldBack(model: string, tags: CallTags): void {
    this.heldBackCounter.add(1, this.attributesOf(model, tags));
  }

  /** Detach the gauge. */
  close(): void {
    this.waitingGauge.removeCallback(this.observe);
  }

  private labelOf(tenant: string): string {
    if (tenant === '') return NONE;
    if (this.named.has(tenant)) return tenant;
    if (this.named.size >= MAX_TENANT_LABELS) {
      if (!this.others) {
        this.others = true;
        for (const model of this.models) this.zero(model, OTHER);
      }
      return OTHER;
    }
    this.named.add(tenant);
    for (const model of this.models) this.zero(model, tenant);
    return tenant;
  }

  private attributesOf(model: string, tags: CallTags): Attributes {
    let byModel = this.attributes.get(model);
    if (byModel === undefined) {
      byModel = new Map();
      this.attributes.set(model, byModel);
    }
    const label = this.labelOf(tags.tenant);
    const key = tags.lane === 'batch' ? `b:${label}` : `i:${label}`;
    let attributes = byModel.get(key);
    if (attributes === undefined) {
      attributes = Object.freeze({ model, lane: tags.lane, tenant: label });
      byModel.set(key, attributes);
    }
    return attributes;
  }

  /** Every counter at 0 for `model` and the tenant label, in both lanes. */
  private zero(model: string, tenant: string): void {
    for (const lane of LANES) {
      const attributes = { model, lane: lane satisfies Lane, tenant };
      this.admittedCounter.add(0, attributes);
      this.queuedCounter.add(0, attributes);
      this.waitedCounter.add(0, attributes);
      this.heldBackCounter.add(0, attributes);
    }
  }
}
